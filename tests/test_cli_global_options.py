"""Issue 37: the global options (-v, --version) are taken before and after the command alike."""
import pytest

from mcudeploy.cli import main, parser


@pytest.mark.parametrize("argv, verbose", [(["-v", "boards"], True), (["boards", "-v"], True),
                                           (["plan", "m.onnx", "-b", "host", "--verbose"], True),
                                           (["-v", "plan", "m.onnx", "-b", "host"], True), (["boards"], False)])
def test_verbose_before_or_after_the_command(argv, verbose):
    assert parser().parse_args(argv).verbose is verbose


def test_version_after_the_command(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["boards", "--version"])
    assert exc.value.code == 0 and capsys.readouterr().out.startswith("mcudeploy ")


def test_boards_with_v_after_runs(capsys):
    assert main(["boards", "-v"]) == 0 and "qemu-m4" in capsys.readouterr().out
