"""Hooks for desktop assistants: ``localmem hook EVENT`` reads a hook's JSON and answers.

Kept import-light on purpose: the forwarding client in this package runs on
every prompt and must start fast, so importing ``localmem.hooks`` loads
nothing (the store, apsw and the recall pipeline load only with
``localmem.hooks.events``). The entry point is
``localmem.hooks.events.answer_hook``; its settings are
``localmem.hooks.settings.HookSettings``. docs/hooks.md describes the protocol.
"""
