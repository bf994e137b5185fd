"""An encoder-only model's masked-token prediction: the top-k at each [MASK] is the softmax of
``BertForMaskedLM``'s logits, the encoder's attention is read like a decoding result's, a sentence
without [MASK] has no positions, and a model that decodes is refused in one line."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from attnviz.core.bundle import load_bundle
from attnviz.core.decoding.masked import masked_prediction_from_bundle
from attnviz.core.decoding.strategies import DecodingError

transformers = pytest.importorskip("transformers", reason="transformers is not installed (pip install 'attnviz[hf]')")

from tiny_families import build_bert, build_gpt2  # noqa: E402  (needs transformers)


def test_top_k_at_each_mask_is_the_softmax_of_transformers_logits(tmp_path):
    folder = build_bert(tmp_path / "bert")
    bundle = load_bundle(folder)
    text = "the [MASK] sat on the [MASK] !"
    result = masked_prediction_from_bundle(bundle, text, top_k=5)
    ids = bundle.src_tokenizer.encode(text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = transformers.BertForMaskedLM.from_pretrained(folder, attn_implementation="eager").eval()
    with torch.no_grad():
        out = theirs(torch.tensor([ids]), output_attentions=True)
    probs = torch.softmax(out.logits[0].double(), -1)
    assert [p.index for p in result.positions] == [i for i, t in enumerate(ids) if t == bundle.src_tokenizer.mask_id] == [2, 6]
    for p in result.positions:
        want = torch.topk(probs[p.index], 5)
        assert [t[1] for t in p.topk] == want.indices.tolist()
        assert np.abs(np.array([t[2] for t in p.topk]) - want.values.numpy()).max() <= 1e-6
    assert np.abs(result.all_attention("encoder") - np.stack([a[0].numpy() for a in out.attentions])).max() <= 1e-5
    assert result.steps == () and result.all_attention("decoder").shape[0] == 0
    assert masked_prediction_from_bundle(bundle, "the cat sat").positions == ()


def test_a_model_that_decodes_is_refused(tmp_path):
    bundle = load_bundle(build_gpt2(tmp_path / "gpt2"))
    with pytest.raises(DecodingError, match="needs an encoder-only model"):
        masked_prediction_from_bundle(bundle, "the cat")
