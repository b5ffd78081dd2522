"""Tree attention is exact: every node's logits equal decoding its path sequentially."""

import random

import pytest
import torch
from tiny import DEVICES, tiny_llama

from opttree.decoding.kv_cache import new_cache
from opttree.decoding.verify import keep_accepted, tree_inputs, verify_tree
from opttree.trees.draft_tree import ROOT, DraftTree


def random_tree(rng: random.Random, n: int, vocab: int) -> DraftTree:
    tree = DraftTree()
    for _ in range(n):
        parent = rng.choice([ROOT] + list(range(len(tree))))
        used = {tree.tokens[c] for c in tree.children(parent)}
        token = rng.choice([t for t in range(vocab) if t not in used])
        tree.add(parent, token, rng.uniform(0.1, 1.0), 0)
    return tree


def sequential_logits(model, ids: list[int]) -> torch.Tensor:
    with torch.no_grad():
        return model(input_ids=torch.tensor([ids], device=model.device)).logits[0, -1]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("attn", ["sdpa", "eager"])
def test_tree_logits_equal_sequential_over_steps(attn, device):
    rng = random.Random(0)
    model = tiny_llama(seed=3, vocab=50, layers=2, attn=attn).to(device)
    committed = [rng.randrange(50) for _ in range(7)]
    cache = new_cache(model)
    with torch.no_grad():
        model(input_ids=torch.tensor([committed[:-1]], device=device), past_key_values=cache, use_cache=True)
    for step in range(4):  # several steps: checks compaction as well as the mask
        tree = random_tree(rng, rng.randint(3, 25), 50)
        prefix = cache.get_seq_length()
        logits, _ = verify_tree(model, cache, committed[-1], tree, torch.device(device))
        assert torch.allclose(logits[0], sequential_logits(model, committed), atol=1e-5)
        for i in range(len(tree)):
            path = [tree.tokens[a] for a in tree.path(i)]
            ref = sequential_logits(model, committed + path)
            assert torch.allclose(logits[i + 1], ref, atol=1e-5), f"step {step} node {i}"
        # accept the path to a random node, as the verifier would, then continue from it
        node = rng.randrange(len(tree))
        accepted = tree.path(node)
        keep_accepted(cache, prefix, accepted)
        committed += [tree.tokens[a] for a in accepted] + [rng.randrange(50)]
        assert cache.get_seq_length() == len(committed) - 1


def test_bool_mask_would_be_wrong_with_eager():
    """Why the mask is additive float: eager attention computes `scores + mask`, so a bool mask
    (True = may attend) adds 0 or 1 and hides nothing, while the float mask (0 / dtype min) gives
    every node exactly its own path's logits. SDPA reads the same bool mask correctly."""
    rng = random.Random(5)
    committed = [rng.randrange(50) for _ in range(6)]
    tree = random_tree(rng, 12, 50)
    assert len({tree.depth[i] for i in range(len(tree))}) > 1 and len(tree.children(ROOT)) > 1
    prefix = len(committed) - 1

    def tree_logits(model, mask):
        cache = new_cache(model)
        with torch.no_grad():
            model(input_ids=torch.tensor([committed[:-1]]), past_key_values=cache, use_cache=True)
            ids, pos, _ = tree_inputs(tree, committed[-1], prefix, torch.float32, "cpu")
            return model(input_ids=ids, position_ids=pos, attention_mask=mask, past_key_values=cache).logits[0]

    _, _, float_mask = tree_inputs(tree, committed[-1], prefix, torch.float32, "cpu")
    assert float_mask.dtype == torch.float32
    bool_mask = float_mask == 0          # the same visibility as a bool mask
    for attn, bool_is_right in (("eager", False), ("sdpa", True)):
        model = tiny_llama(seed=3, vocab=50, layers=2, attn=attn)
        refs = torch.stack([sequential_logits(model, committed)] + [
            sequential_logits(model, committed + [tree.tokens[a] for a in tree.path(i)]) for i in range(len(tree))])
        assert torch.allclose(tree_logits(model, float_mask), refs, atol=1e-5), attn
        assert torch.allclose(tree_logits(model, bool_mask), refs, atol=1e-5) == bool_is_right, attn
