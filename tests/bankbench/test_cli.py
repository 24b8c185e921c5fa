import subprocess
import sys

from bankbench import cli
from bankbench.cli import COMMANDS, build_parser


def test_help_lists_every_command():
    out = subprocess.run(
        [sys.executable, "-m", "bankbench", "--help"], capture_output=True, text=True, check=True
    ).stdout
    for name in COMMANDS:
        assert name in out


def test_unknown_command_is_rejected():
    proc = subprocess.run(
        [sys.executable, "-m", "bankbench", "no-such-command"], capture_output=True, text=True
    )
    assert proc.returncode == 2
    assert "invalid choice" in proc.stderr


def test_parser_builds_subcommands():
    parser = build_parser()
    assert parser.prog == "bankbench"


def test_ctrl_c_while_the_commands_are_imported_is_one_line_and_exit_130(monkeypatch, capsys):
    def interrupted():
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "build_parser", interrupted)
    assert cli.main(["report", "x"]) == 130
    assert capsys.readouterr().err == "bankbench: interrupted\n"
