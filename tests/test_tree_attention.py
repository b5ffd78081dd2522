"""Tree attention is exact: every node's logits equal decoding its path sequentially."""

import random

import pytest
import torch
from tiny import DEVICES, tiny_llama

from opttree.decoding.kv_cache import new_cache
from opttree.decoding.verify import keep_accepted, verify_tree
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
        logits, _ = verify_tree(model, cache, committed[-1], tree, torch.device(device), False)
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
    """Why the mask is additive float: documents the transformers 5.x pitfall we guard against."""
    from opttree.decoding.tree_attention import tree_mask

    mask = tree_mask(2, 5, [[2], [3]], torch.float32, "cpu")
    assert mask.dtype == torch.float32 and mask.shape == (1, 1, 2, 5)
    assert mask[0, 0, 0].tolist()[:3] == [0.0, 0.0, 0.0]
    assert mask[0, 0, 0, 3] == torch.finfo(torch.float32).min
