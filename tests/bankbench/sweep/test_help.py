"""`bankbench sweep --help` reads as a user's help: no "(default: None)", no Python lists."""

from __future__ import annotations

import re

import pytest

from bankbench.cli import main


def test_sweep_help_shows_only_defaults_that_say_something(capsys):
    with pytest.raises(SystemExit):
        main(["sweep", "--help"])
    text = re.sub(r"\s+", " ", capsys.readouterr().out)
    assert "(default: None)" not in text and "None:" not in text
    assert not re.search(r"default: [\[{]", text)  # no Python list or dict
    assert "(default: 1,2,4,8)" in text  # a list default as it is typed
    assert "(default: local)" in text and "(default: jobs)" in text


def test_sweep_help_says_no_plots_leaves_out_the_figures(capsys):
    with pytest.raises(SystemExit):
        main(["sweep", "--help"])
    text = re.sub(r"\s+", " ", capsys.readouterr().out)
    assert "--no-plots" in text and "without its figures" in text
