"""The few-row CPU linear kernel (oneDNN over reordered weights): same products as F.linear, used
only where it should be, refreshed when a weight changes, and tree decoding through it still equals
the target's own greedy output."""

import copy

import pytest
import torch
import torch.nn.functional as F
from reference import PROMPTS, reference
from tiny import tiny_pair

from opttree.config import DecodeConfig
from opttree.engine.speculative import run
from opttree.nets import few_row_linear as FR

needs_int8 = pytest.mark.skipif(not FR._have_int8(), reason="this PyTorch build has no dynamic int8 linear")
needs_bf16 = pytest.mark.skipif(not FR.bf16_supported(), reason="oneDNN runs no bf16 inner product here")


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("rows", [1, 2, 3, 5, 6, 7, 12, 64])
def test_matches_plain_linear(rows, bias):
    torch.manual_seed(rows)
    layer = torch.nn.Linear(48, 80, bias=bias)
    x = torch.randn(1, rows, 48)
    want = F.linear(x, layer.weight, layer.bias)
    assert FR.use_few_row_linear(layer) == 1
    with torch.inference_mode():
        got = layer(x)
    assert got.shape == want.shape and got.is_contiguous()
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    # 2D input and the unpatched path give the same numbers too
    with torch.inference_mode():
        torch.testing.assert_close(layer(x[0]), want[0], rtol=1e-5, atol=1e-5)
    FR.use_plain_linear(layer)
    assert "forward" not in layer.__dict__


def test_reordered_weight_follows_in_place_changes():
    """A draft evaluated between training steps must not run on a stale copy of its weights."""
    layer = torch.nn.Linear(16, 24)
    FR.use_few_row_linear(layer)
    x = torch.randn(3, 16)
    with torch.inference_mode():
        before = layer(x)
    with torch.no_grad():
        layer.weight.mul_(2.0)  # what an optimizer step does: in place, same storage
    with torch.inference_mode():
        after = layer(x)
    torch.testing.assert_close(after, F.linear(x, layer.weight, layer.bias), rtol=1e-5, atol=1e-5)
    assert not torch.allclose(before, after)
    with torch.no_grad():
        layer.weight = torch.nn.Parameter(torch.zeros(24, 16))  # a new tensor altogether
        torch.testing.assert_close(layer(x), layer.bias.expand(3, 24))


def test_switching_kernels_back_and_forth_keeps_the_reordered_copy():
    """The verify-cost curve alternates kernels every repetition: re-reordering every weight on each
    switch once made its few-row timings ~130 ms too slow."""
    layer = torch.nn.Linear(16, 24)
    FR.use_few_row_linear(layer)
    x = torch.randn(2, 16)
    with torch.inference_mode():
        layer(x)
        packed = layer._few_row_pack.packed
        FR.use_plain_linear(layer)
        layer(x)
        FR.use_few_row_linear(layer)
        layer(x)
    assert packed is not None and layer._few_row_pack.packed is packed


def test_a_patched_model_can_still_be_deep_copied():
    """The reordered copy is an opaque oneDNN tensor: copies start with an empty holder and repack."""

    layer = torch.nn.Linear(16, 24)
    FR.use_few_row_linear(layer)
    x = torch.randn(2, 16)
    with torch.inference_mode():
        want = layer(x)  # the holder now has a reordered copy
    twin = copy.deepcopy(layer)
    with torch.inference_mode():
        torch.testing.assert_close(twin(x), want, rtol=1e-5, atol=1e-5)


def test_few_row_matmul_matches_a_plain_product():
    w, x = torch.randn(40, 16), torch.randn(4, 16)
    with torch.inference_mode():
        torch.testing.assert_close(FR.few_row_matmul(x, w, FR.PackedWeight()), x @ w.T, rtol=1e-5, atol=1e-5)


def test_without_the_onednn_op_everything_keeps_f_linear(monkeypatch):
    monkeypatch.setattr(FR, "_have_onednn", lambda: False)
    layer = torch.nn.Linear(8, 8)
    assert FR.use_few_row_linear(layer) == 0 and "forward" not in layer.__dict__
    x = torch.randn(2, 8)
    with torch.inference_mode():
        torch.testing.assert_close(FR.few_row_matmul(x, layer.weight, FR.PackedWeight()), x @ layer.weight.T)


def test_only_cpu_fp32_inference_is_rerouted(monkeypatch):
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Linear(8, 8).to(torch.bfloat16))
    assert FR.use_few_row_linear(model) == 1  # the bf16 layer is left alone
    assert "forward" in model[0].__dict__ and "forward" not in model[1].__dict__
    # with grad enabled (training) the plain kernel runs, so autograd sees an ordinary linear
    x = torch.randn(3, 8, requires_grad=True)
    model[0](x).sum().backward()
    assert x.grad is not None
    FR.use_plain_linear(model)
    monkeypatch.setenv("OPTTREE_PLAIN_LINEAR", "1")
    assert FR.use_few_row_linear(model) == 0
    monkeypatch.delenv("OPTTREE_PLAIN_LINEAR")
    # a forward wrapped by someone else (accelerate's hooks) is neither replaced nor removed
    hooked = torch.nn.Linear(8, 8)
    hooked.forward = lambda x: x
    assert FR.use_few_row_linear(hooked) == 0
    FR.use_plain_linear(hooked)
    assert "forward" in hooked.__dict__


def test_loaded_bundled_target_uses_it(smollm):
    patched = [m for m in smollm.target.modules() if type(m) is torch.nn.Linear and "forward" in m.__dict__]
    assert len(patched) == 30 * 7 + 1  # every projection of the 30 layers and the LM head


@pytest.mark.parametrize("int8", [False, pytest.param(True, marks=needs_int8)], ids=["fp32-draft", "int8-draft"])
@pytest.mark.parametrize("drafter", ["classic", "eagle", "early-exit"])
def test_small_trees_through_the_kernel_stay_exact(drafter, int8, monkeypatch):
    """Budgets of 1-5 nodes verify 2-6 tokens: the small trees the kernel exists for; a draft on int8
    weights proposes other trees but commits the same tokens."""
    monkeypatch.setenv("OPTTREE_DRAFT_INT8", "1" if int8 else "0")
    pair = tiny_pair(drafter, eos=9)
    assert FR.use_few_row_linear(pair.target) > 0
    FR.use_few_row_linear(pair.draft_model, draft=int8)
    assert FR.kernel_of(pair.draft_model) == ("int8" if int8 else "few-row")
    for nodes in (1, 3, 5):
        for prompt in PROMPTS:
            ref = reference(pair.target, prompt, 24)
            cfg = DecodeConfig(method="opt-tree", nodes=nodes, threshold=0.0, max_depth=5, max_new_tokens=24)
            assert run(pair, "", cfg, prompt_ids=prompt)["output_ids"] == ref


def test_verify_cost_curve_times_both_kernels_and_leaves_the_fast_one_on(tmp_path):
    from opttree.bench.plots import plot_verify_cost
    from opttree.bench.verify_cost import verify_cost_curve

    pair = tiny_pair("none")
    FR.use_few_row_linear(pair.target)
    cost = verify_cost_curve(pair, (1, 3, 9), reps=2, warmup=0)
    assert cost["meta"]["kernel"] == "few-row"
    for p in cost["points"]:
        assert p["plain_median_ms"] > 0 and p["plain_relative"] > 0 and p["reps"] == 2
    assert all("forward" in m.__dict__ for m in pair.target.modules() if type(m) is torch.nn.Linear)
    assert plot_verify_cost(cost, tmp_path / "c.png") and (tmp_path / "c.png").stat().st_size > 1000
    FR.use_plain_linear(pair.target)
    plain = verify_cost_curve(pair, (1, 3), reps=1, warmup=0)
    assert plain["meta"]["kernel"] == "default" and "plain_median_ms" not in plain["points"][0]


# --- int8 drafts (opt-in): only a draft's own layers, close to fp32, refreshed like the fp32 copy ---

@pytest.fixture()
def int8_on(monkeypatch):
    if not FR._have_int8():
        pytest.skip("this PyTorch build has no dynamic int8 linear")
    monkeypatch.setenv("OPTTREE_DRAFT_INT8", "1")


def _int8_layer(seed=0, bias=True):
    torch.manual_seed(seed)
    layer = torch.nn.Linear(64, 300, bias=bias)
    assert FR.use_few_row_linear(layer, draft=True) == 1
    return layer


@pytest.mark.parametrize("bias", [True, False])
def test_a_draft_layer_runs_on_int8_weights_close_to_fp32(bias, int8_on):
    layer = _int8_layer(bias=bias)
    assert FR.kernel_of(layer) == "int8" and layer._few_row_pack.int8
    x = torch.randn(5, 64)
    want = F.linear(x, layer.weight, layer.bias)
    with torch.inference_mode():
        got = layer(x)
        got3 = layer(x[None])
    assert got.shape == want.shape and got3.shape == (1, 5, 300)
    torch.testing.assert_close(got3[0], got)
    err = (got - want).abs().max() / want.abs().max()
    assert 0 < err < 0.03, f"int8 products should differ from fp32 a little, not by {err:.3f}"
    # the ranking a tree reads: each row's top choice is one of fp32's top three
    top3 = want.topk(3, dim=-1).indices
    assert all(int(g) in t.tolist() for g, t in zip(got.argmax(-1), top3))


def test_int8_copy_follows_in_place_changes_of_weight_and_bias(int8_on):
    layer = _int8_layer(1)
    x = torch.randn(3, 64)
    with torch.inference_mode():
        layer(x)
    with torch.no_grad():
        layer.weight.mul_(-1.0)
        layer.bias.add_(5.0)
    with torch.inference_mode():
        got = layer(x)
    want = F.linear(x, layer.weight, layer.bias)
    assert (got - want).abs().max() < 0.03 * want.abs().max()


@needs_int8
def test_int8_drafts_are_opt_in_and_kept_by_copies(monkeypatch):

    layer = torch.nn.Linear(8, 8)
    for off in (None, "0", ""):
        if off is None:
            monkeypatch.delenv("OPTTREE_DRAFT_INT8", raising=False)
        else:
            monkeypatch.setenv("OPTTREE_DRAFT_INT8", off)
        FR.use_few_row_linear(layer, draft=True)
        assert FR.kernel_of(layer) == "few-row" and not layer._few_row_pack.int8
    monkeypatch.setenv("OPTTREE_DRAFT_INT8", "1")
    FR.use_few_row_linear(layer)                    # not a draft: never int8
    assert FR.kernel_of(layer) == "few-row"
    FR.use_few_row_linear(layer, draft=True)        # loading it again as a draft switches its holders
    assert FR.kernel_of(layer) == "int8" and layer._few_row_pack.int8
    twin = copy.deepcopy(layer)
    assert twin._few_row_pack.int8 and FR.kernel_of(twin) == "int8"
    FR.use_plain_linear(layer)
    assert FR.kernel_of(layer) == "default"
    monkeypatch.setattr(FR, "_have_int8", lambda: False)   # a build without the quantized ops
    FR.use_few_row_linear(layer, draft=True)
    assert FR.kernel_of(layer) == "few-row"


@pytest.mark.parametrize("kind", ["eagle", "fused"])
def test_a_heads_input_projections_stay_fp32_on_int8(kind, int8_on):
    """The projection reads the target's hidden state beside a token embedding: one int8 scale for both
    erases the embedding, so it keeps fp32; the decoder layer behind it runs on int8."""
    head = tiny_pair(kind).draft_model
    FR.use_few_row_linear(head, draft=True)
    kinds = {name: m._few_row_pack.int8 for name, m in head.named_modules() if type(m) is torch.nn.Linear}
    skipped = {n for n in kinds if n.split(".")[0] in ("fc", "fuse")}
    assert skipped == ({"fc", "fuse"} if kind == "fused" else {"fc"})
    assert not any(kinds[n] for n in skipped)
    assert all(kinds[n] for n in kinds if n not in skipped) and len(kinds) > len(skipped)


def test_a_full_vocabulary_head_on_int8_leaves_the_targets_lm_head_fp32(int8_on):
    """A head with no draft vocabulary reads the target's LM head; on int8 it keeps its own copy."""
    pair = tiny_pair("eagle")
    FR.use_few_row_linear(pair.target)
    head, lm_head = pair.draft_model, pair.target.get_output_embeddings()
    assert head.vocab_ids.numel() == 0
    FR.use_few_row_linear(head, draft=True)
    feats = torch.randn(1, 4, lm_head.weight.shape[1])
    with torch.inference_mode():
        sub, ids = head.draft_logits(feats, lm_head)
        want = lm_head(feats)
    assert ids is None and sub.shape == want.shape
    assert not lm_head._few_row_pack.int8 and FR.kernel_of(pair.target) == "few-row"
    rows, pack = head._draft_rows(lm_head.weight)
    assert pack.int8 and rows.data_ptr() == lm_head.weight.data_ptr()   # no gathered copy of the fp32 rows
    assert not any(p is lm_head.weight for p in head.parameters()) and "_rows" not in head.state_dict()
    assert 0 < (sub - want).abs().max() < 0.03 * want.abs().max()


def test_a_full_vocabulary_head_on_int8_keeps_the_lm_heads_bias(int8_on):
    pair = tiny_pair("eagle")
    head, lm_head = pair.draft_model, torch.nn.Linear(pair.target.config.hidden_size, 64, bias=True)
    FR.use_few_row_linear(head, draft=True)
    torch.nn.init.constant_(lm_head.bias, 3.0)
    feats = torch.randn(1, 2, lm_head.weight.shape[1])
    with torch.inference_mode():
        sub, _ = head.draft_logits(feats, lm_head)
    want = F.linear(feats, lm_head.weight, lm_head.bias)
    assert (sub - want).abs().max() < 0.1


def test_a_target_drafting_for_itself_never_goes_on_int8(int8_on):
    pair = tiny_pair("classic", draft_is_target=True)
    from opttree.models.loading import prepare

    prepare(pair.target, torch.device("cpu"))
    FR.use_few_row_linear(pair.draft_model, draft=True)      # the draft is the target object
    assert FR.kernel_of(pair.target) == "few-row"
    assert not any(m._few_row_pack.int8 for m in pair.target.modules() if type(m) is torch.nn.Linear)


def test_one_dimensional_input_works_on_int8_as_nn_linear_does(int8_on):
    layer = _int8_layer(2)
    x = torch.randn(64)
    with torch.inference_mode():
        got = layer(x)
    assert got.shape == (300,) and (got - F.linear(x, layer.weight, layer.bias)).abs().max() < 0.1


@needs_int8
@pytest.mark.parametrize("drafter", ["eagle", "classic", "early-exit"])
def test_loaded_bundled_drafts_run_on_int8_on_request_and_the_target_never(smollm, drafter, monkeypatch):
    from opttree.drafters.registry import with_drafter
    from opttree.engine import cost

    monkeypatch.delenv("OPTTREE_DRAFT_INT8", raising=False)
    assert FR.kernel_of(with_drafter(smollm, drafter).draft_model) == "few-row"    # the default
    monkeypatch.setenv("OPTTREE_DRAFT_INT8", "1")
    pair = with_drafter(smollm, drafter)
    assert FR.kernel_of(pair.draft_model) == "int8"
    assert FR.kernel_of(pair.target) == "few-row"
    assert not any(getattr(m, "_few_row_pack", None) and m._few_row_pack.int8 for m in pair.target.modules())
    key = cost.cache_key(pair)
    assert key["draft_kernel"] == "int8" and "draft_kernel" not in cost.target_key(pair)
    assert key["draft_fp32"] == (["fc", "fuse"] if drafter == "eagle" else [])   # the bundled head is fused


def _head_with_draft_vocab(pair, n: int = 24):
    """The tiny pair's feature head again, over a draft vocabulary of n of the target's tokens."""
    from opttree.nets.feature_head import FeatureHead, head_config_from_target

    torch.manual_seed(0)
    head = FeatureHead(head_config_from_target(pair.target.config, draft_vocab=n)).eval()
    head.vocab_ids.copy_(torch.randperm(pair.target.config.vocab_size)[:n].sort().values)
    return head.requires_grad_(False)


def test_draft_rows_follow_changes_of_the_lm_head_and_the_vocabulary(monkeypatch):
    """The gathered draft-vocabulary rows are cached; an in-place change of the target's LM head or of
    the head's vocabulary ids gathers them again, so the logits always read the current weights."""
    monkeypatch.setenv("OPTTREE_DRAFT_ROWS", "fp32")
    pair = tiny_pair("eagle")
    head, lm_head = _head_with_draft_vocab(pair), pair.target.get_output_embeddings()
    feats = torch.randn(1, 3, lm_head.weight.shape[1])

    def check():
        with torch.inference_mode():
            got, ids = head.draft_logits(feats, lm_head)
        torch.testing.assert_close(got, feats @ lm_head.weight[head.vocab_ids].T, rtol=1e-5, atol=1e-5)
        assert torch.equal(ids, head.vocab_ids)

    check()
    with torch.no_grad():
        lm_head.weight.add_(1.0)
    check()
    head.vocab_ids.copy_(head.vocab_ids.flip(0))
    check()


@needs_bf16
def test_draft_rows_on_bf16_rank_like_fp32(monkeypatch):
    """OPTTREE_DRAFT_ROWS=bf16: the head's draft-vocabulary rows run on a bf16 copy (fp32 out), close to
    the fp32 product; fp32 keeps the exact product; the copy follows a change of the target's weight."""
    pair = tiny_pair("eagle")
    head, lm_head = _head_with_draft_vocab(pair), pair.target.get_output_embeddings()
    feats = torch.randn(1, 5, lm_head.weight.shape[1])
    want = feats @ lm_head.weight[head.vocab_ids].T
    monkeypatch.setenv("OPTTREE_DRAFT_ROWS", "fp32")
    with torch.inference_mode():
        exact, ids = head.draft_logits(feats, lm_head)
    assert head.rows_kernel() == "fp32" and torch.equal(ids, head.vocab_ids)
    torch.testing.assert_close(exact, want, rtol=1e-5, atol=1e-5)
    monkeypatch.setenv("OPTTREE_DRAFT_ROWS", "bf16")
    with torch.inference_mode():
        got, _ = head.draft_logits(feats, lm_head)
    assert head.rows_kernel() == "bf16" and head._draft_rows(lm_head.weight)[1].bf16
    assert got.dtype == torch.float32 and not torch.equal(got, want)
    assert (got - want).abs().max() < 0.02 * want.abs().max()
    with torch.no_grad():
        lm_head.weight.mul_(2.0)                       # a new target weight: the bf16 copy is made again
    with torch.inference_mode():
        again, _ = head.draft_logits(feats, lm_head)
    assert (again - 2 * want).abs().max() < 0.04 * want.abs().max()


def test_auto_puts_draft_rows_on_bf16_only_where_the_cpu_multiplies_it(monkeypatch):
    from opttree import machine
    from opttree.errors import BadInput

    assert machine.native_bf16("flags\t: fpu avx512f avx512_bf16 avx512_vnni")
    assert machine.native_bf16("flags\t: fpu avx512f amx_tile amx_bf16")
    assert not machine.native_bf16("flags\t: fpu avx2 avx512f avx512bw")
    assert not machine.native_bf16("")
    pair = tiny_pair("eagle")
    head = _head_with_draft_vocab(pair)
    monkeypatch.delenv("OPTTREE_DRAFT_ROWS", raising=False)
    monkeypatch.setattr(FR, "bf16_supported", lambda: True)
    for native, kind in ((True, "bf16"), (False, "fp32")):
        monkeypatch.setattr(machine, "native_bf16", lambda cpuinfo=None, n=native: n)
        assert head.rows_kernel() == kind
    assert pair.draft_model.rows_kernel() == "fp32"      # a full-vocabulary head calls the target's LM head
    monkeypatch.setenv("OPTTREE_DRAFT_ROWS", "bf16")
    monkeypatch.setenv("OPTTREE_PLAIN_LINEAR", "1")          # the plain reference runs fp32 everywhere
    assert head.rows_kernel() == "fp32"
    monkeypatch.delenv("OPTTREE_PLAIN_LINEAR")
    monkeypatch.setattr(FR, "bf16_supported", lambda: False)   # a CPU or build without oneDNN's bf16
    assert head.rows_kernel() == "fp32"
    monkeypatch.setenv("OPTTREE_DRAFT_ROWS", "half")
    with pytest.raises(BadInput, match="OPTTREE_DRAFT_ROWS"):
        head.rows_kernel()


def test_the_cost_curve_of_a_draft_is_keyed_by_its_rows_kernel(monkeypatch):
    from opttree.engine.cost import draft_kernel

    head = _head_with_draft_vocab(tiny_pair("eagle"))
    keys = {}
    for rows in ("bf16", "fp32"):
        monkeypatch.setenv("OPTTREE_DRAFT_ROWS", rows)
        keys[rows] = draft_kernel(head)
    assert keys["bf16"]["draft_rows"] == "bf16" and keys["fp32"]["draft_rows"] == "fp32"
    assert draft_kernel(None)["draft_rows"] is None


@pytest.mark.parametrize("rows", [pytest.param("bf16", marks=needs_bf16), "fp32"])
def test_trees_from_bf16_draft_rows_stay_exact(rows, monkeypatch):
    """Whatever the rows run on, the target decides every token: greedy output is the target's own."""
    monkeypatch.setenv("OPTTREE_DRAFT_ROWS", rows)
    pair = tiny_pair("eagle", eos=9)
    pair.draft_model = _head_with_draft_vocab(pair, n=40)
    FR.use_few_row_linear(pair.target)
    for nodes in (3, 10):
        for prompt in PROMPTS:
            cfg = DecodeConfig(method="opt-tree", nodes=nodes, threshold=0.0, max_depth=5, max_new_tokens=20)
            assert run(pair, "", cfg, prompt_ids=prompt)["output_ids"] == reference(pair.target, prompt, 20)
    packs = pair.draft_model._rows_packs                      # the rows' kernel the runs drafted with
    assert list(packs) == [rows] and packs[rows].bf16 == (rows == "bf16") and packs[rows].packed is not None


def test_an_int8_head_that_keeps_its_rows_fp32_keeps_them_off_bf16(int8_on, monkeypatch):
    """`int8_skip` naming the LM-head rows means fp32 rows, whatever OPTTREE_DRAFT_ROWS says."""
    from opttree.nets.feature_head import LM_ROWS

    monkeypatch.setenv("OPTTREE_DRAFT_ROWS", "bf16")
    pair = tiny_pair("eagle")
    head = _head_with_draft_vocab(pair)
    FR.use_few_row_linear(head, draft=True)
    assert head.rows_kernel() == "int8"
    head.int8_skip = (*head.int8_skip, LM_ROWS)
    assert head.rows_kernel() == "fp32"
