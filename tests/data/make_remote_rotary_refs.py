"""Dump the rotary tables of the remote-code families' own modeling code to
``tests/data/remote_rotary_refs.npz`` (issue 59 item 5; read by ``tests/test_remote_rotary.py``).

Run in a side virtual environment with torch, never the project's (the package does not depend on
torch)::

    python3.11 -m venv /tmp/torchvenv && /tmp/torchvenv/bin/pip install numpy torch
    /tmp/torchvenv/bin/python tests/data/make_remote_rotary_refs.py

Made with torch 2.15.0 (PyPI wheel, CPU, ``torch.backends.cpu.get_cpu_capability()`` "AVX512"),
NumPy 2.4, on CPU in float32. The rotary classes below are the remote code's, their table lines
copied verbatim (the lines these configurations reach; the nomic NTK class calls its parent's cache
update where its own copy repeats it, and xPos scaling, devices and dtypes other than float32 are
left out):

- ``NomicBertRotaryEmbedding`` / ``NomicBertDynamicNTKRotaryEmbedding``: nomic-ai/contrastors
  ``src/contrastors/models/huggingface/modeling_hf_nomic_bert.py`` (commit 613ddfd3, 2025-02-18;
  the file last changed in 496a0593), the file the Hub's nomic-ai/nomic-bert-2048 ships.
- ``RotaryEmbedding`` / ``NTKScalingRotaryEmbedding``: Alibaba-NLP/new-impl ``modeling.py`` as
  copied in github.com/xuhaike/SparseCL ``sparsecl/gte/modeling.py`` (commit 14fcd8bc, 78,302
  bytes; the copy ``reference/make_gte.py`` read), lines 183-251.
- jina-v3: jinaai/xlm-roberta-flash-implementation ``rotary.py`` as copied in
  github.com/aoncevay/jina-wrapper ``xlm-roberta-flash-implementation/rotary.py`` (commit d3188e68;
  the copy ``reference/make_jina.py`` read): ``self._base = float(base)``, ``_compute_inv_freq``
  (``1.0 / (self.base ** (torch.arange(0, self.dim, 2, dtype=torch.float32) / self.dim))``),
  ``t = torch.arange(seqlen, dtype=torch.float32)``, ``freqs = torch.outer(t, inv_freq)``,
  ``torch.cos(freqs)``: the nomic class's lines, which make its tables here.

Each table is made by a freshly built module at one sequence length, as the converted graph gives
each text what a freshly loaded model gives it alone.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import torch

POSITIONS = [0, 1, 2, 511, 2047, 2048, 2999, 4095, 8191]


# --- nomic-ai/contrastors modeling_hf_nomic_bert.py (verbatim table lines) -----------------------
class NomicBertRotaryEmbedding(torch.nn.Module):
    def __init__(self, dim, base=10000.0, pos_idx_in_fp32=True, device=None):
        super().__init__()
        self.dim = dim
        self.base = float(base)
        self.pos_idx_in_fp32 = pos_idx_in_fp32
        inv_freq = self._compute_inv_freq(device)
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.scale = None
        self._seq_len_cached = 0
        self._cos_cached = None
        self._sin_cached = None

    def _compute_inv_freq(self, device=None):
        return 1.0 / (
            self.base
            ** (torch.arange(0, self.dim, 2, device=device, dtype=torch.float32) / self.dim)
        )

    def _update_cos_sin_cache(self, seqlen, device=None, dtype=None):
        if seqlen > self._seq_len_cached or self._cos_cached is None:
            self._seq_len_cached = seqlen
            if self.pos_idx_in_fp32:
                t = torch.arange(seqlen, device=device, dtype=torch.float32)
                if self.inv_freq.dtype != torch.float32:
                    inv_freq = self._compute_inv_freq(device=device)
                else:
                    inv_freq = self.inv_freq
            else:
                t = torch.arange(seqlen, device=device, dtype=self.inv_freq.dtype)
                inv_freq = self.inv_freq
            freqs = torch.outer(t, inv_freq)
            self._cos_cached = torch.cos(freqs).to(dtype)
            self._sin_cached = torch.sin(freqs).to(dtype)


class NomicBertDynamicNTKRotaryEmbedding(NomicBertRotaryEmbedding):
    def __init__(self, rotary_scaling_factor, max_position_embeddings, **kwargs):
        super().__init__(**kwargs)
        self.rotary_scaling_factor = rotary_scaling_factor
        self.max_position_embeddings = max_position_embeddings

    def _compute_inv_freq(self, base=None, device=None):
        if base is None:
            base = self.base
        return 1.0 / (
            base ** (torch.arange(0, self.dim, 2, device=device, dtype=torch.float32) / self.dim)
        )

    def _update_cos_sin_cache(self, seqlen, device=None, dtype=None):
        if seqlen > self.max_position_embeddings:
            base = self.base * (
                (self.rotary_scaling_factor * seqlen / self.max_position_embeddings)
                - (self.rotary_scaling_factor - 1)
            ) ** (self.dim / (self.dim - 2))
            inv_freq = self._compute_inv_freq(base=base, device=device)
            self.register_buffer("inv_freq", inv_freq, persistent=False)
        super()._update_cos_sin_cache(seqlen, device=device, dtype=dtype)


# --- Alibaba-NLP/new-impl modeling.py (verbatim table lines) ------------------------------------
class RotaryEmbedding(torch.nn.Module):
    def __init__(self, dim, max_position_embeddings=512, base=10000.0, device=None):
        super().__init__()
        self.dim = dim
        self.max_position_embeddings = max_position_embeddings
        self.base = base
        inv_freq = 1.0 / (self.base ** (torch.arange(0, self.dim, 2).float().to(device) / self.dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self._set_cos_sin_cache(
            seq_len=max_position_embeddings,
            device=self.inv_freq.device,
            dtype=torch.get_default_dtype(),
        )

    def _set_cos_sin_cache(self, seq_len, device, dtype):
        self.max_seq_len_cached = seq_len
        t = torch.arange(self.max_seq_len_cached, device=device, dtype=torch.float32)
        freqs = torch.einsum("i,j->ij", t, self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos_cached", emb.cos().to(dtype), persistent=False)
        self.register_buffer("sin_cached", emb.sin().to(dtype), persistent=False)


class NTKScalingRotaryEmbedding(RotaryEmbedding):
    """RotaryEmbedding extended with fixed and mixed NTK scaling. https://kexue.fm/archives/9706"""

    def __init__(
        self,
        dim,
        max_position_embeddings=512,
        base=10000,
        device=None,
        scaling_factor=1.0,
        mixed_b=None,
    ):
        self.scaling_factor = scaling_factor
        self.mixed_b = mixed_b
        super().__init__(dim, max_position_embeddings, base, device)
        max_position_embeddings = max_position_embeddings * self.scaling_factor
        self._set_cos_sin_cache(
            max_position_embeddings, self.inv_freq.device, torch.get_default_dtype()
        )

    def _set_cos_sin_cache(self, seq_len, device, dtype):
        self.max_seq_len_cached = seq_len
        if seq_len > self.max_position_embeddings:
            base = self.base * (self.scaling_factor if self.mixed_b is None else 1)
            inv_freq = 1.0 / (base ** (torch.arange(0, self.dim, 2).float().to(device) / self.dim))
            if self.mixed_b is None:
                inv_freq = inv_freq / self.scaling_factor ** (2 / self.dim)  # (6)
            else:
                a = torch.tensor(self.scaling_factor).log() / (self.dim / 2) ** self.mixed_b  # (13)
                lambda_1_m = (
                    a * torch.arange(1, self.dim // 2 + 1).float().to(device) ** self.mixed_b
                ).exp()  # (12)
                inv_freq = inv_freq / lambda_1_m  # (10)
            self.register_buffer("inv_freq", inv_freq, persistent=False)
        t = torch.arange(self.max_seq_len_cached, device=device, dtype=torch.float32)
        freqs = torch.einsum("i,j->ij", t, self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos_cached", emb.cos().to(dtype), persistent=False)
        self.register_buffer("sin_cached", emb.sin().to(dtype), persistent=False)


# --- the dumps ------------------------------------------------------------------------------------
def nomic_tables(config: dict, seqlen: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """inv_freq, cos, sin ``[seqlen, dim / 2]`` of a fresh nomic rotary at ``seqlen`` tokens."""
    dim = config["head_dim"]  # jina-v3: rotary_emb_dim = the head size (an int)
    if config["family"] == "nomic":  # nomic: rotary_emb_dim = head_dim * rotary_emb_fraction
        dim = config["head_dim"] * config["rotary_emb_fraction"]
    if config.get("rotary_scaling_factor"):
        rope: NomicBertRotaryEmbedding = NomicBertDynamicNTKRotaryEmbedding(
            dim=dim,
            base=config["rotary_emb_base"],
            rotary_scaling_factor=config["rotary_scaling_factor"],
            max_position_embeddings=config["max_trained_positions"],
        )
    else:
        rope = NomicBertRotaryEmbedding(dim=dim, base=config["rotary_emb_base"])
    rope._update_cos_sin_cache(seqlen, device=torch.device("cpu"), dtype=torch.float32)
    return rope.inv_freq, rope._cos_cached, rope._sin_cached


def gte_tables(config: dict, seqlen: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """inv_freq, cos, sin ``[seqlen, head_dim]`` of new-impl's rotary (as ``_init_rope`` builds
    it) after a forward of ``seqlen`` tokens."""
    kwargs = {
        "dim": config["head_dim"],
        "max_position_embeddings": config["max_position_embeddings"],
        "base": config["rope_theta"],
    }
    scaling = config.get("rope_scaling")
    if scaling is None:
        rope: RotaryEmbedding = RotaryEmbedding(**kwargs)
    else:
        rope = NTKScalingRotaryEmbedding(
            **kwargs, scaling_factor=scaling["factor"], mixed_b=scaling.get("mixed_b")
        )
    if seqlen > rope.max_seq_len_cached:  # RotaryEmbedding.forward
        rope._set_cos_sin_cache(seq_len=seqlen, device=torch.device("cpu"), dtype=torch.float32)
    return rope.inv_freq, rope.cos_cached[:seqlen], rope.sin_cached[:seqlen]


CONFIGS: dict[str, dict] = {
    # nomic-embed-text-v1.5's rotary: head 64, base 1000, dynamic NTK factor 2 past 2048
    "nomic_ntk_2049": {
        "family": "nomic",
        "head_dim": 64,
        "rotary_emb_fraction": 1.0,
        "rotary_emb_base": 1000,
        "rotary_scaling_factor": 2,
        "max_trained_positions": 2048,
        "seqlen": 2049,
    },
    "nomic_ntk_3000": {
        "family": "nomic",
        "head_dim": 64,
        "rotary_emb_fraction": 1.0,
        "rotary_emb_base": 1000,
        "rotary_scaling_factor": 2,
        "max_trained_positions": 2048,
        "seqlen": 3000,
    },
    "nomic_ntk_8192": {
        "family": "nomic",
        "head_dim": 64,
        "rotary_emb_fraction": 1.0,
        "rotary_emb_base": 1000,
        "rotary_scaling_factor": 2,
        "max_trained_positions": 2048,
        "seqlen": 8192,
    },
    "nomic_ntk_2048": {
        "family": "nomic",
        "head_dim": 64,
        "rotary_emb_fraction": 1.0,
        "rotary_emb_base": 1000,
        "rotary_scaling_factor": 2,
        "max_trained_positions": 2048,
        "seqlen": 2048,
    },
    "nomic_plain": {
        "family": "nomic",
        "head_dim": 64,
        "rotary_emb_fraction": 1.0,
        "rotary_emb_base": 1000,
        "seqlen": 8192,
    },
    # gte-base-en-v1.5 (rope_theta 500000, ntk factor 2), gte-large-en-v1.5 (160000)
    "gte_ntk_base": {
        "family": "gte",
        "head_dim": 64,
        "max_position_embeddings": 8192,
        "rope_theta": 500000.0,
        "rope_scaling": {"type": "ntk", "factor": 2.0},
        "seqlen": 8192,
    },
    "gte_ntk_large": {
        "family": "gte",
        "head_dim": 64,
        "max_position_embeddings": 8192,
        "rope_theta": 160000.0,
        "rope_scaling": {"type": "ntk", "factor": 2.0},
        "seqlen": 8192,
    },
    "gte_mixed_b": {
        "family": "gte",
        "head_dim": 64,
        "max_position_embeddings": 8192,
        "rope_theta": 10000.0,
        "rope_scaling": {"type": "ntk", "factor": 4.0, "mixed_b": 0.7},
        "seqlen": 8192,
    },
    "gte_plain": {
        "family": "gte",
        "head_dim": 64,
        "max_position_embeddings": 512,
        "rope_theta": 160000.0,
        "rope_scaling": None,
        "seqlen": 8192,
    },
    # jina-embeddings-v3: head 64, rotary_emb_base 20000 (the nomic/flash-attn rotary lines)
    "jina_v3": {
        "family": "jina",
        "head_dim": 64,
        "rotary_emb_fraction": 1.0,
        "rotary_emb_base": 20000.0,
        "seqlen": 8192,
    },
    # a head of 48 (24 frequencies: torch's scalar libm pow, no SLEEF block)
    "jina_head48": {
        "family": "jina",
        "head_dim": 48,
        "rotary_emb_fraction": 1.0,
        "rotary_emb_base": 10000.0,
        "seqlen": 8192,
    },
}


def main(out: Path) -> None:
    arrays: dict[str, np.ndarray] = {}
    for name, config in CONFIGS.items():
        seqlen = config["seqlen"]
        tables = gte_tables if config["family"] == "gte" else nomic_tables
        inv_freq, cos, sin = tables(config, seqlen)
        positions = np.array([p for p in POSITIONS if p < seqlen], dtype=np.int64)
        t = torch.from_numpy(positions.astype(np.float32))
        angles = torch.outer(t, inv_freq)  # the remote code's own product, at the kept rows
        half = inv_freq.shape[0]
        arrays[f"{name}/inv_freq"] = inv_freq.numpy().astype(np.float32)
        arrays[f"{name}/positions"] = positions
        arrays[f"{name}/angles"] = angles.numpy().astype(np.float32)
        arrays[f"{name}/cos"] = cos[positions][:, :half].numpy().astype(np.float32)
        arrays[f"{name}/sin"] = sin[positions][:, :half].numpy().astype(np.float32)
    arrays["configs"] = np.array(json.dumps(CONFIGS, sort_keys=True))
    arrays["torch_version"] = np.array(torch.__version__)
    arrays["cpu_capability"] = np.array(torch.backends.cpu.get_cpu_capability())
    np.savez_compressed(out, **arrays)


if __name__ == "__main__":
    main(
        Path(sys.argv[1])
        if len(sys.argv) > 1
        else Path(__file__).with_name("remote_rotary_refs.npz")
    )
