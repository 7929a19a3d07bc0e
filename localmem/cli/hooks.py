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
from .common import EXIT_OK, AddCommand
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
    p.add_argument("-v", "--verbose", action="store_true", help="say on stderr who answered and how fast")

    p = command("hooks", cmd_hooks, "install localmem's hooks into an assistant's settings, or remove them",
                epilog="Shows the change to the settings file as a diff and writes it only with --write, "
                       "keeping a dated copy of the old file beside it. Installing twice changes nothing; "
                       "uninstalling removes only localmem's entries. The hook commands name this "
                       "localmem by its absolute path, and the store when --db (or $LOCALMEM_DB) names one.")
    p.add_argument("action", choices=("install", "uninstall"), help="install or uninstall")
    p.add_argument("client", choices=CLIENTS, help="the assistant: claude-code")
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
    db, embedder, notes = _store_options(args)
    program = install.localmem_program()
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
