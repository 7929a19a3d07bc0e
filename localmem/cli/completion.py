"""Shell completion scripts for bash, zsh and fish, generated from the argument parser.

Nothing is listed by hand: the commands, their options, option values with
fixed choices and file arguments are read from the parser, so a new option
completes as soon as it exists.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass, field

SHELLS = ("bash", "zsh", "fish")
# Arguments that name files: by metavar (or dest, for options without one).
FILE_NAMES = frozenset({"PATH", "FILE", "DEST", "SRC", "path", "file", "dest", "src"})


@dataclass
class Option:
    flags: list[str]
    help: str
    takes_value: bool
    choices: list[str] | None
    files: bool
    metavar: str


@dataclass
class Positional:
    name: str
    help: str
    choices: list[str] | None
    files: bool
    many: bool


@dataclass
class Command:
    name: str
    help: str
    options: list[Option] = field(default_factory=list)
    positionals: list[Positional] = field(default_factory=list)


def _short_help(text: str | None) -> str:
    """The help without its parenthesised asides, up to its first semicolon, on one line."""
    if not text or text == argparse.SUPPRESS:
        return ""
    text = " ".join(text.split())
    while True:
        shorter = re.sub(r" ?\([^()]*\)", "", text)
        if shorter == text:
            break
        text = shorter
    return text.split("; ", 1)[0].strip()


def _is_files(action: argparse.Action) -> bool:
    metavar = action.metavar if isinstance(action.metavar, str) else None
    return (metavar or action.dest) in FILE_NAMES


def _option(action: argparse.Action, helps: dict[str, str]) -> Option:
    help_text = helps.get(action.dest) if action.help == argparse.SUPPRESS else action.help
    return Option(flags=list(action.option_strings), help=_short_help(help_text),
                  takes_value=action.nargs != 0,
                  choices=[str(c) for c in action.choices] if action.choices else None,
                  files=_is_files(action),
                  metavar=(action.metavar if isinstance(action.metavar, str) else action.dest.upper()))


def describe(parser: argparse.ArgumentParser) -> tuple[list[Option], list[Command]]:
    """The global options and the commands of ``parser``, as completion needs them."""
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    root_helps = {a.dest: a.help for a in parser._actions if a.option_strings and a.help}
    global_options = [_option(a, root_helps) for a in parser._actions if a.option_strings]
    helps = {a.dest: a.help or "" for a in subparsers._choices_actions}
    commands = []
    for name, sub in subparsers.choices.items():
        command = Command(name, _short_help(helps.get(name)))
        for action in sub._actions:
            if action.option_strings:
                command.options.append(_option(action, root_helps))
            else:
                command.positionals.append(Positional(
                    name=action.metavar if isinstance(action.metavar, str) else action.dest,
                    help=_short_help(action.help),
                    choices=[str(c) for c in action.choices] if action.choices else None,
                    files=_is_files(action), many=action.nargs in ("+", "*")))
        commands.append(command)
    return global_options, commands


def script(parser: argparse.ArgumentParser, shell: str, prog: str = "localmem") -> str:
    """The completion script for ``shell`` (one of ``SHELLS``)."""
    global_options, commands = describe(parser)
    return {"bash": _bash, "zsh": _zsh, "fish": _fish}[shell](prog, global_options, commands)


# -- bash -------------------------------------------------------------------------------------


def _words(values: list[str]) -> str:
    return " ".join(values)



def _bash_value_action(option: Option) -> str:
    """What bash offers after an option that takes a value: its choices, file names, or nothing."""
    if option.choices:
        return f'COMPREPLY=($(compgen -W "{_words(option.choices)}" -- "$cur"))'
    if option.files:
        return 'COMPREPLY=($(compgen -f -- "$cur"))'
    return ":"  # a free value: nothing to offer

def _bash(prog: str, global_options: list[Option], commands: list[Command]) -> str:
    func = "_" + re.sub(r"\W", "_", prog)
    global_valued = [f for o in global_options if o.takes_value for f in o.flags]
    global_flags = {f for o in global_options for f in o.flags}
    value_arms = []
    for command in commands:
        for option in command.options:
            if not option.takes_value or set(option.flags) <= global_flags:
                continue  # global options are handled once, below
            for flag in option.flags:
                value_arms.append(f'        "{command.name} {flag}") {_bash_value_action(option)}; return ;;')
    for option in global_options:
        if option.takes_value:
            for flag in option.flags:
                value_arms.append(f'        *" {flag}") {_bash_value_action(option)}; return ;;')
    command_arms = []
    for command in commands:
        flags = [f for o in command.options for f in o.flags]
        choices = [c for p in command.positionals for c in (p.choices or [])]
        files = "1" if any(p.files for p in command.positionals) else ""
        command_arms.append(f'        {command.name}) opts="{_words(flags)}"; words="{_words(choices)}"; '
                            f'files="{files}" ;;')
    return f"""# bash completion for {prog} (generated by '{prog} completion bash')
# Load it now:  source <({prog} completion bash)
# For good:     {prog} completion bash > ~/.local/share/bash-completion/completions/{prog}
{func}() {{
    local cur prev cmd word i opts words files
    COMPREPLY=()
    cur="${{COMP_WORDS[COMP_CWORD]}}"
    prev="${{COMP_WORDS[COMP_CWORD-1]}}"
    cmd=""
    for ((i = 1; i < COMP_CWORD; i++)); do
        word="${{COMP_WORDS[i]}}"
        case "$word" in
            {"|".join(global_valued)}) ((i++)) ;;
            -*) ;;
            *) cmd="$word"; break ;;
        esac
    done
    case "$cmd $prev" in
{chr(10).join(value_arms)}
    esac
    if [[ -z "$cmd" ]]; then
        if [[ "$cur" == -* ]]; then
            COMPREPLY=($(compgen -W "{_words([f for o in global_options for f in o.flags])}" -- "$cur"))
        else
            COMPREPLY=($(compgen -W "{_words([c.name for c in commands])}" -- "$cur"))
        fi
        return
    fi
    opts=""; words=""; files=""
    case "$cmd" in
{chr(10).join(command_arms)}
    esac
    if [[ "$cur" == -* ]]; then
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
    else
        COMPREPLY=($(compgen -W "$words" -- "$cur"))
        if [[ -n "$files" ]]; then
            COMPREPLY+=($(compgen -f -- "$cur"))
        fi
    fi
}}
complete -o default -F {func} {prog}
"""


# -- zsh --------------------------------------------------------------------------------------


def _zsh_text(text: str) -> str:
    """Text for inside a single-quoted _arguments spec: brackets and colons would end a field."""
    text = text.replace("[", "(").replace("]", ")").replace(":", " -")
    return text.replace("\\", "\\\\").replace("'", "'\\''")


def _zsh_option(option: Option) -> list[str]:
    specs = []
    for flag in option.flags:
        spec = f"{flag}[{_zsh_text(option.help)}]"
        if option.takes_value:
            message = _zsh_text(option.metavar.lower())
            if option.choices:
                spec += f":{message}:({' '.join(option.choices)})"
            elif option.files:
                spec += f":{message}:_files"
            else:
                spec += f":{message}: "
        specs.append(f"'{spec}'")
    return specs


def _zsh_positional(index: int, positional: Positional) -> str:
    where = "*" if positional.many else str(index)
    message = _zsh_text(positional.help or positional.name)
    if positional.choices:
        action = f"({' '.join(positional.choices)})"
    elif positional.files:
        action = "_files"
    else:
        action = " "
    return f"'{where}:{message}:{action}'"


def _zsh(prog: str, global_options: list[Option], commands: list[Command]) -> str:
    func = "_" + re.sub(r"\W", "_", prog)
    described = "\n".join(f"        '{c.name}:{_zsh_text(c.help)}'" for c in commands)
    root = [s for o in global_options for s in _zsh_option(o)]
    arms = []
    for command in commands:
        specs = [s for o in command.options for s in _zsh_option(o)]
        specs += [_zsh_positional(n, p) for n, p in enumerate(command.positionals, 1)]
        body = " \\\n                ".join(specs) if specs else "'*:: :'"
        arms.append(f"            {command.name})\n                _arguments {body} ;;")
    root_specs = " \\\n        ".join(root + ["'1:command:->command'", "'*::argument:->argument'"])
    return f"""#compdef {prog}
# zsh completion for {prog} (generated by '{prog} completion zsh')
# Load it now:  source <({prog} completion zsh)   (after compinit)
# For good:     {prog} completion zsh > "${{fpath[1]}}/_{prog}"
{func}() {{
    local context state state_descr line
    typeset -A opt_args
    local -a commands
    commands=(
{described}
    )
    _arguments -C \\
        {root_specs}
    case $state in
        command)
            _describe -t commands '{prog} command' commands ;;
        argument)
            case $line[1] in
{chr(10).join(arms)}
            esac ;;
    esac
}}
if [[ "$funcstack[1]" == "{func}" ]]; then
    {func} "$@"
else
    compdef {func} {prog}
fi
"""


# -- fish -------------------------------------------------------------------------------------


def _fish_text(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _fish_option(prog: str, option: Option, condition: str | None) -> list[str]:
    lines = []
    for flag in option.flags:
        parts = [f"complete -c {prog}"]
        if condition:
            parts.append(f"-n {condition}")
        parts.append(f"-l {flag[2:]}" if flag.startswith("--") else f"-s {flag[1:]}")
        if option.takes_value:
            if option.choices:  # each value described by its option's name, not the option's help
                described = " ".join(f"{c}\\t{option.metavar.lower()}" for c in option.choices)
                parts.append(f"-x -a {_fish_text(described)}")
            elif option.files:
                parts.append("-r -F")
            else:
                parts.append("-x")
        if option.help:
            parts.append(f"-d {_fish_text(option.help)}")
        lines.append(" ".join(parts))
    return lines


def _fish(prog: str, global_options: list[Option], commands: list[Command]) -> str:
    names = " ".join(c.name for c in commands)
    lines = [f"# fish completion for {prog} (generated by '{prog} completion fish')",
             f"# Load it now:  {prog} completion fish | source",
             f"# For good:     {prog} completion fish > ~/.config/fish/completions/{prog}.fish",
             f"complete -c {prog} -f"]
    no_command = _fish_text(f"not __fish_seen_subcommand_from {names}")
    for command in commands:
        lines.append(f"complete -c {prog} -n {no_command} -a {command.name} -d {_fish_text(command.help)}")
    everywhere = {f for c in commands for o in c.options for f in o.flags}
    for option in global_options:  # --version and the like only before a command
        lines.extend(_fish_option(prog, option, None if set(option.flags) <= everywhere else no_command))
    global_flags = {f for o in global_options for f in o.flags}
    for command in commands:
        seen = _fish_text(f"__fish_seen_subcommand_from {command.name}")
        for option in command.options:
            if set(option.flags) <= global_flags:
                continue  # already offered everywhere
            lines.extend(_fish_option(prog, option, seen))
        for positional in command.positionals:
            if positional.choices:
                lines.append(f"complete -c {prog} -n {seen} -x -a {_fish_text(' '.join(positional.choices))}")
            elif positional.files:
                lines.append(f"complete -c {prog} -n {seen} -F")
    return "\n".join(lines) + "\n"
