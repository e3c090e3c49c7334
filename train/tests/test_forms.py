"""The two forms of one model agree: the parallel forward is a session's first segment;
with one pass it equals step-wise decoding; its decode regime, iterated, converges to
step-wise decoding; prefill does not depend on the chunk size."""

import pytest
import torch

from dory import Session
from dory.fixtures import rel_err
from helpers import ids, tiny_config, tiny_model


def parallel_logits(model, tokens, passes=None, final_kv=None):
    states, kv = model(torch.tensor([tokens]), passes=passes, final_kv=final_kv)
    return model.logits(states[-1])[0], kv


@pytest.mark.parametrize("passes", [1, 3])
def test_parallel_forward_is_the_first_segment(passes):
    model = tiny_model(tiny_config(passes=passes))
    tokens = ids(13, 97)
    want, _ = parallel_logits(model, tokens)
    got = Session(model).prompt(tokens)
    assert rel_err(got, want) < 1e-12


def test_one_pass_parallel_equals_stepwise_decoding():
    model = tiny_model(tiny_config(passes=1))
    tokens = ids(17, 97)
    want, _ = parallel_logits(model, tokens)
    s = Session(model)
    rows = [s.prompt(tokens[:1])[0]] + [s.step(t)[0] for t in tokens[1:]]
    for r, row in enumerate(rows):
        assert rel_err(row, want[r]) < 1e-12, f"row {r}"


def test_more_passes_parallel_differs_from_decoding():
    # The semantics really differ when P > 1 (§5); the test above must not pass by accident.
    model = tiny_model(tiny_config(passes=3))
    tokens = ids(12, 97)
    want, _ = parallel_logits(model, tokens)
    s = Session(model)
    rows = [s.prompt(tokens[:1])[0]] + [s.step(t)[0] for t in tokens[1:]]
    assert rel_err(torch.stack(rows), want) > 1e-4


def test_decode_regime_iterated_equals_stepwise_decoding():
    # Row r of the decode regime depends on the final entries of rows < r only, so n
    # iterations fix the first n rows exactly: after T iterations, every row.
    model = tiny_model(tiny_config(passes=3))
    tokens = ids(9, 97)
    s = Session(model)
    want = torch.stack([s.prompt(tokens[:1])[0]] + [s.step(t)[0] for t in tokens[1:]])
    got, kv = parallel_logits(model, tokens)
    for _ in range(len(tokens)):
        got, kv = parallel_logits(model, tokens, final_kv=kv)
    assert rel_err(got, want) < 1e-12


@pytest.mark.parametrize("chunk", [1, 2, 4, 7])
def test_prefill_is_independent_of_chunk_size(chunk):
    model = tiny_model(tiny_config(passes=3))
    tokens = ids(19, 97)
    whole = Session(model).prompt(tokens)
    s = Session(model)
    parts = s.prompt(tokens, chunk=chunk)
    assert rel_err(parts, whole) < 1e-12
    # …and the caches it leaves are the same: the next decoding step agrees too.
    s2 = Session(model)
    s2.prompt(tokens)
    assert rel_err(s.step(5)[0], s2.step(5)[0]) < 1e-12


def test_o1_with_an_empty_far_span_is_exact():
    # §6: with an empty far span the O(1) attend equals exact attention.
    from dory import O1
    model = tiny_model(tiny_config(passes=2))
    tokens = ids(11, 97)
    o1 = O1(sinks=2, window=16, landmarks=2, stride=2, seal_at=6)
    exact, approx = Session(model), Session(model, attention="o1", o1=o1)
    exact.prompt(tokens)
    approx.prompt(tokens)
    for t in [3, 4, 5, 6]:
        a, b = exact.step(t)[0], approx.step(t)[0]
        assert rel_err(b, a) < 1e-12
    assert approx.sealed


@pytest.mark.parametrize("criterion, thresholds", [("kl", [0.02, 0.05, 0.1, 0.2]),
                                                   ("confidence", [0.1, 0.2, 0.3, 0.5])])
def test_decode_with_exit_is_stepwise_decoding_with_exit(criterion, thresholds):
    # The batched fixed point (used to tune the exit rule) against the Session, token by
    # token: the same perplexity and the same passes, once iterated over every row.
    import math
    from dory import Exit
    from dory.perplexity import decode_with_exit
    model = tiny_model(tiny_config(passes=4), alpha_gain=1.0)
    with torch.no_grad():
        model.head_scale.mul_(8.0)
    tokens = ids(12, 97)
    for tau in thresholds:
        rule = Exit(criterion, tau, 1)
        s = Session(model, exit=rule)
        rows, used = [s.prompt(tokens[:1])[0]], [4]
        for t in tokens[1:-1]:
            logits, p = s.step(t)
            rows.append(logits)
            used.append(p)
        if 4 > sum(used) / len(used) > 1.2:
            break
    else:
        pytest.fail("no threshold gave a mix of exits")
    lp = torch.stack(rows).log_softmax(-1)
    want_ppl = math.exp(-float(lp[torch.arange(len(rows)), torch.tensor(tokens[1:])].mean()))
    ppl, passes = decode_with_exit(model, torch.tensor([tokens]), 1, torch.device("cpu"), rule, len(tokens))
    assert abs(ppl / want_ppl - 1) < 1e-9
    assert passes == pytest.approx(sum(used) / len(used))
