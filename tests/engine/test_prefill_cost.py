"""The prefill benchmark: both forms timed, the last-row form keeping one row, bad arguments refused."""

import pytest
import torch
from tiny import tiny_pair

from opttree.bench import prefill_cost


def test_both_forms_are_timed_for_every_length_and_the_table_reads_them():
    target = tiny_pair("classic").target
    kept = []
    hook = target.register_forward_hook(lambda m, args, out: kept.append(out.logits.shape[1]))
    try:
        times = prefill_cost.prefill_ms(target, [5, 9], reps=2, device=torch.device("cpu"))
    finally:
        hook.remove()
    assert list(times) == [5, 9]
    assert all(len(t[form]) == 2 and min(t[form]) > 0 for t in times.values() for form in prefill_cost.FORMS)
    # per length: warm-up + 2 repetitions, each form once: every row (n) and the last row (1)
    assert sorted(kept[:6]) == [1, 1, 1, 5, 5, 5] and sorted(kept[6:]) == [1, 1, 1, 9, 9, 9]
    lines = prefill_cost.table(times).splitlines()
    assert len(lines) == 4 and lines[2].startswith("| 5 |") and lines[3].endswith("% |")


@pytest.mark.parametrize("argv", [["--lengths", "0"], ["--lengths", ","], ["--lengths", "64,many"], ["--reps", "0"]])
def test_bad_lengths_and_repetitions_are_refused(argv):
    with pytest.raises(SystemExit):
        prefill_cost.main(argv)


def test_an_unknown_model_is_a_clear_error(tmp_path, capsys):
    from opttree.errors import guarded

    assert guarded(lambda: prefill_cost.main(["--target", str(tmp_path / "no-such-model"), "--lengths", "4"])) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and len(err.strip().splitlines()) == 1 and "Traceback" not in err
