"""Commands about localmem itself: version (for bug reports) and completion (shell scripts)."""

from __future__ import annotations

import argparse

from .common import EXIT_OK, AddCommand, db_path
from .completion import SHELLS, script
from .output import Output


def register(command: AddCommand) -> None:
    """version, completion."""
    command("version", cmd_version,
            "print the versions of localmem, Python, SQLite, sqlite-vec, apsw and the extras, "
            "and the database's schema version")

    p = command("completion", cmd_completion, "print a shell completion script (bash, zsh or fish)",
                epilog="bash: source <(localmem completion bash), or save it as "
                       "~/.local/share/bash-completion/completions/localmem. zsh: source "
                       "<(localmem completion zsh) after compinit, or save it as _localmem in a "
                       "folder of $fpath. fish: localmem completion fish > "
                       "~/.config/fish/completions/localmem.fish")
    p.add_argument("shell", choices=SHELLS, help="the shell to complete for")


def cmd_version(args: argparse.Namespace, out: Output) -> int:
    from ..maintenance.versions import versions

    report = versions(db_path(args))
    if out.as_json:
        out.json(report)
        return EXIT_OK
    extras = []
    for extra, packages in report["extras"].items():
        have = [f"{name} {version}" for name, version in packages.items() if version]
        extras.append(f"{extra} ({', '.join(have)})" if len(have) == len(packages) else f"{extra} (not installed)")
    database = report["database"]
    if not database["exists"]:
        db_text = f"{database['path']} (no file yet)"
    elif database.get("error"):
        db_text = f"{database['path']} (unreadable: {database['error']})"
    else:
        version = database["schema_version"]
        note = ("" if version == database["latest_schema_version"]
                else f"; this localmem writes schema {database['latest_schema_version']}"
                     + (" and migrates it on open" if version < database["latest_schema_version"]
                        else " and cannot open it"))
        db_text = f"{database['path']} (schema {version}{note})"
    rows = [("localmem", report["localmem"]), ("python", report["python"]),
            ("sqlite", report["sqlite"]), ("sqlite-vec", report["sqlite_vec"]),
            ("apsw", report["apsw"]), ("extras", ", ".join(extras)), ("database", db_text)]
    width = max(len(name) for name, _ in rows)
    out.lines(f"{name.ljust(width)}  {value}" for name, value in rows)
    return EXIT_OK


def cmd_completion(args: argparse.Namespace, out: Output) -> int:
    out.stdout.write(script(args.root_parser, args.shell))
    return EXIT_OK
