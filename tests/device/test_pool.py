"""The pool of boards on jobs that stand for board work: results in job order whatever order they
finish in, a board that stops answering is taken out and its job redone on another, and an error of
the job itself ends the map with that error."""
from __future__ import annotations

import threading
import time

import pytest

from mcudeploy.boards import load_board
from mcudeploy.device.pool import BoardPool, Job, NoBoardLeft
from mcudeploy.device.session import NoAnswer
from mcudeploy.errors import MCUDeployError


def pool(count: int, lines: list) -> BoardPool:
    return BoardPool.of(load_board("qemu-m4"), count, say=lines.append)


def test_results_come_in_job_order_and_boards_work_at_once():
    lines, running, most = [], [0], [0]
    lock = threading.Lock()

    def job(k):
        def run(board):
            with lock:
                running[0] += 1
                most[0] = max(most[0], running[0])
            time.sleep(0.05 * (4 - k % 4))  # the later jobs finish first
            with lock:
                running[0] -= 1
            return k, board.index
        return Job(f"job {k}", run)

    results = pool(3, lines).map([job(k) for k in range(8)])
    assert [k for k, _ in results] == list(range(8))
    assert most[0] == 3 and {b for _, b in results} == {0, 1, 2}
    assert any(line.startswith("3/3 boards busy; board 1: job") for line in lines)


def test_a_board_that_stops_answering_is_taken_out_and_its_job_redone():
    lines = []

    def run(board):
        if board.index == 1:
            raise NoAnswer("board qemu-m4 did not answer RUN_OP")
        time.sleep(0.01)
        return board.index

    p = pool(2, lines)
    assert p.map([Job(f"job {k}", run) for k in range(4)]) == [0, 0, 0, 0]
    assert p.size == 1
    assert any(line.startswith("warning: board 2 stopped answering (board qemu-m4 did not answer RUN_OP); taken out "
                               "of the pool, 1 left; its work is done again on another") for line in lines)
    with pytest.raises(NoBoardLeft, match=r"^every qemu-m4 board of the pool stopped answering \(the last: silent\)$"):
        p.map([Job("job", lambda b: (_ for _ in ()).throw(NoAnswer("silent")))])  # the last board lost


def test_every_board_of_a_pool_lost_while_jobs_run_stops_the_map_in_one_sentence():
    lines, started = [], []

    def run(board):
        started.append(board.index)
        time.sleep(0.01)
        raise NoAnswer(f"board {board.index + 1} fell silent")

    with pytest.raises(NoBoardLeft, match=r"^every qemu-m4 board of the pool stopped answering \(the last: board \d "
                                          r"fell silent\)$"):
        pool(2, lines).map([Job(f"job {k}", run) for k in range(4)])
    assert sorted(set(started)) == [0, 1]
    assert sum(line.startswith("warning: ") for line in lines) == 2


def test_an_error_of_the_job_itself_ends_the_map():
    def run(board):
        raise MCUDeployError("the firmware does not fit")

    p = pool(2, [])
    with pytest.raises(MCUDeployError, match="does not fit"):
        p.map([Job(f"job {k}", run) for k in range(3)])
    assert p.size == 2  # no board was blamed


def test_a_board_alone_that_stops_answering_is_the_commands_error_said_once():
    lines = []
    with pytest.raises(NoAnswer, match="silent"):
        pool(1, lines).map([Job("job", lambda b: (_ for _ in ()).throw(NoAnswer("silent")))])
    assert lines == []  # no status, no warning beside the command's one-sentence error
