"""Hook commands: ``hook EVENT`` (answer an assistant's hook) and ``hooks install|uninstall``.

``localmem hook`` itself is sent on before the parser is built (see
``localmem.cli.main`` and ``localmem.hooks.client``); it is registered here
too so that help and completion know it.
"""

from __future__ import annotations

import argparse
import json
import os

from ..hooks import client, install
from ..errors import ValidationError
from .common import EXIT_OK, AddCommand, open_store
from .output import Output

CLIENTS = ("claude-code",)


def register(command: AddCommand) -> None:
    """hook, hooks."""
    p = command("hook", cmd_hook, "answer an assistant's hook: its JSON on stdin, the answer on stdout",
                epilog="Always exits 0 (a hook must not break its client); when there is nothing to say "
                       "it prints nothing, and says why on stderr. Forwards to the store's warm process, "
                       "else to a 'localmem serve' (or 'localmem ui') running for the store; otherwise "
                       "answers in-process and then starts the warm process (docs/daemon.md). "
                       "'localmem hooks install claude-code' sets it up.")
    p.add_argument("event", help="SessionStart, UserPromptSubmit, PreCompact, Stop, SubagentStop or SessionEnd")
    p.add_argument("--deadline", type=float, metavar="SECONDS",
                   help=f"answer nothing past this long (default ${client.DEADLINE_ENV}, else "
                        f"{client.PROMPT_DEADLINE:g} s for prompt events, {client.CAPTURE_DEADLINE:g} s for capture)")
    p.add_argument("--no-forward", dest="forward", action="store_false",
                   help="answer in-process even when a warm process or a server runs for the store")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="say on stderr who answered, how fast, and why each note was injected or not")

    p = command("hooks", cmd_hooks, "install localmem's hooks into an assistant's settings, remove them, "
                "or show which project a folder maps to",
                epilog="install/uninstall CLIENT: shows the change to the settings file as a diff and writes "
                       "it only with --write, keeping a dated copy of the old file beside it. Installing twice "
                       "changes nothing; uninstalling removes only localmem's entries. The hook commands name "
                       "this localmem by its absolute path, and the store when --db (or $LOCALMEM_DB) names one. "
                       "status [PATH]: which project PATH (default: the current directory) maps to, how "
                       "each project tag was matched, and how many notes carry it (current and total).")
    p.add_argument("action", choices=("install", "uninstall", "status"), help="install, uninstall or status")
    p.add_argument("client", nargs="?", metavar="CLIENT|PATH",
                   help="install/uninstall: the assistant (claude-code); status: the folder (default .)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--user", dest="scope", action="store_const", const="user",
                       help="~/.claude/settings.json: every project (the default)")
    where.add_argument("--project", nargs="?", const=".", metavar="DIR",
                       help="DIR/.claude/settings.json (default DIR: the current directory)")
    p.add_argument("--write", action="store_true", help="write the change (without it: only show it)")
    p.add_argument("--print", dest="print_only", action="store_true",
                   help="print localmem's hook entries alone (JSON), to paste by hand")


def cmd_hook(args: argparse.Namespace, out: Output) -> int:
    return client.run(list(args.raw_argv))


def _store_options(args: argparse.Namespace) -> tuple[str | None, str | None, list[str]]:
    notes = []
    db = getattr(args, "db", None)
    if not db and (os.environ.get("LOCALMEM_DB") or "").strip():
        db = os.environ["LOCALMEM_DB"].strip()
        notes.append(f"note: the hooks name the store from $LOCALMEM_DB ({os.path.abspath(db)}), "
                     "which the assistant's environment may not set")
    embedder = getattr(args, "embedder", None)
    return db, embedder, notes


def cmd_hooks(args: argparse.Namespace, out: Output) -> int:
    if args.action == "status":
        return _status(args, out)
    if args.client not in CLIENTS:
        raise ValidationError(f"'hooks {args.action}' needs the assistant: one of {', '.join(CLIENTS)} "
                              f"(got {args.client!r})")
    db, embedder, notes = _store_options(args)
    program = install.fast_hook_program()
    commands = {event: install.hook_command(event, program, db, embedder) for event in install.CLAUDE_CODE_EVENTS}
    if args.print_only:
        if args.action != "install":
            out.note("note: --print shows what install adds; uninstall removes those entries")
        out.line(json.dumps(install.snippet(commands), indent=2))
        return EXIT_OK
    scope = "project" if args.project is not None else "user"
    path = install.settings_path(scope, args.project)
    change = install.plan(path, commands if args.action == "install" else None)
    backup = install.write(change) if args.write and change.changed else None
    if out.as_json:
        out.json({"status": "success", "action": args.action, "client": args.client,
                  "settings_path": str(path), "changed": change.changed,
                  "written": bool(args.write and change.changed),
                  "backup": str(backup) if backup else None, "diff": change.diff()})
        return EXIT_OK
    for note in notes:
        out.note(note)
    if not change.changed:
        state = "already has localmem's hooks" if args.action == "install" else "has no localmem hooks"
        out.line(f"{path} {state}: nothing to change")
        return EXIT_OK
    out.line(change.diff().rstrip("\n"))
    if not args.write:
        out.note(f"(nothing written: add --write to change {path})")
    else:
        kept = f"; the old file is kept as {backup}" if backup else ""
        out.note(f"{'installed into' if args.action == 'install' else 'removed from'} {path}{kept}")
    return EXIT_OK


def _status(args: argparse.Namespace, out: Output) -> int:
    from ..hooks.project import project_names
    from ..hooks.scope import resolve, some_project_tags
    from ..hooks.settings import HookSettings
    from ..text import visible

    folder = os.path.abspath(os.path.expanduser(args.client or "."))
    if not os.path.isdir(folder):
        raise ValidationError(f"'PATH' must be a folder; {folder} is not one")
    names = project_names(folder, HookSettings.from_env().project)
    with open_store(args, must_exist=True) as store:
        scope = resolve(store, names, counted=True)
        known = [] if scope.matches else some_project_tags(store)
    found = [{"name": name, "how": how} for name, how, _ in names.names]
    if out.as_json:
        out.json({"status": "success", "folder": folder, "root": names.root, "found": names.found, "names": found,
                  **scope.describe(), "current": sum(m[2] for m in scope.matches),
                  "total": sum(m[3] for m in scope.matches), "other_project_tags": known})
        return EXIT_OK

    def shown(text: str) -> None:
        # A folder's name may hold control characters (an unpacked archive's): shown as U+FFFD, as stored text is.
        out.line(visible(text))

    if names.primary is None:
        shown(f"{folder}: no project" + (f" ({names.found})" if names.found else ""))
        return EXIT_OK
    above = names.root not in (None, folder)  # named for a folder above this one (or its real path)
    shown(f"{folder} is project {names.primary}" + (f" (checkout {names.root})" if above else ""))
    if names.found:
        shown(f"  folder: {names.found}")
    for item in found:
        shown(f"  name {item['name']!r}: from {item['how']}")
    if not scope.matches:
        shown("  no note carries a matching project tag; the hooks inject none of this project's notes")
        shown(f"  project tags in the store: {', '.join(known) if known else 'none'}")
        out.note("note: name the project in .localmem.json ({\"project\": \"NAME\"}) or $LOCALMEM_HOOK_PROJECT")
        return EXIT_OK
    for tag, how, current, total in scope.matches:
        shown(f"  {tag}: {current} current of {total} notes (matched by {how})")
    shown(f"  in all: {sum(m[2] for m in scope.matches)} current of {sum(m[3] for m in scope.matches)} notes")
    return EXIT_OK
