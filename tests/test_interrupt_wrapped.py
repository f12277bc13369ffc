"""A Ctrl-C that lands while Python creates a class (a pydantic model at import) reaches
poolc as a RuntimeError whose cause is the KeyboardInterrupt (Python 3.11 wraps what
``__set_name__`` raises): it is still one line and exit 130, not an internal error."""

from __future__ import annotations

import pytest

from poolc.cli import guarded


def test_an_interrupt_wrapped_by_set_name_is_an_interrupt(capsys):
    class Descriptor:
        def __set_name__(self, owner: type, name: str) -> None:
            raise KeyboardInterrupt

    @guarded
    def validate() -> None:
        type("Model", (), {"field": Descriptor()})

    with pytest.raises(SystemExit) as exited:
        validate()
    err = capsys.readouterr().err
    assert exited.value.code == 130 and err.startswith("poolc: interrupted by SIGINT"), err
