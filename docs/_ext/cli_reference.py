"""``.. cli-reference:: module:app`` — a Typer application's commands, options and help.

Typer carries its own copy of click, which sphinx-click does not recognise; this
directive reads the same objects (``typer.main.get_command``) and writes one section
per command: its help, its usage line and a table of its arguments and options.
"""

from __future__ import annotations

import importlib
import inspect

import typer.main
from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles


def _metavar(argument) -> str:
    return argument.metavar or argument.name.upper()


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _parameter_rows(command) -> list[tuple[str, str]]:
    rows = []
    for parameter in command.params:
        if getattr(parameter, "hidden", False):
            continue
        if parameter.param_type_name == "argument":
            name = f"``{_metavar(parameter)}``"
            text = "required" if parameter.required else "optional"
        else:
            names = ", ".join(f"``{opt}``" for opt in (*parameter.opts, *parameter.secondary_opts))
            text = parameter.help or ""
            default = parameter.default
            shown = isinstance(default, str | int | float) and not isinstance(default, bool)
            if not parameter.is_flag and shown and default != "":
                text += f" Default: ``{default}``."
            if parameter.required:
                text += " Required."
            name = names
        rows.append((name, _cell(text)))
    return rows


def _command_lines(command, path: str) -> list[str]:
    title = f"``{path}``"
    lines = [title, "-" * len(title), ""]
    # "Examples:" introduces indented command lines: a literal block in reStructuredText
    help_lines = inspect.cleandoc(command.help or "").splitlines()
    lines += [line + ":" if line.strip() == "Examples:" else line for line in help_lines] + [""]
    arguments = [p for p in command.params if p.param_type_name == "argument"]
    metavars = " ".join(_metavar(p) for p in arguments)
    lines += [".. code-block:: text", "", f"   {path} [OPTIONS] {metavars}".rstrip(), ""]
    rows = _parameter_rows(command)
    if rows:
        lines += [".. list-table::", "   :header-rows: 1", "   :widths: 30 70", ""]
        lines += ["   * - argument or option", "     - meaning"]
        for name, text in rows:
            lines += [f"   * - {name}", f"     - {text}"]
        lines.append("")
    return lines


class CliReference(SphinxDirective):
    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        module_name, attribute = self.arguments[0].split(":")
        group = typer.main.get_command(getattr(importlib.import_module(module_name), attribute))
        lines: list[str] = []
        for name in sorted(group.commands):
            lines += _command_lines(group.commands[name], f"attnpool {name}")
        container = nodes.section()
        nested_parse_with_titles(
            self.state, StringList(lines, self.get_source_info()[0]), container
        )
        return container.children


def setup(app) -> dict[str, bool]:
    app.add_directive("cli-reference", CliReference)
    return {"parallel_read_safe": True}
