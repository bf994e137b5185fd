"""The training state of a run as its checkpoints carry it beside the bundle (``checkpoint`` names
the files and reads them back checked): built for a save, and put back into the optimiser, the
model and the random generators on resume. No Qt.

training_state.json holds the run's counters and options (the caller's ``info``), the optimiser's
non-tensor state and the averaging window; training_state.safetensors the optimiser's tensors,
the averaged sums (``avg.*``), the weights as trained in float32 (``raw.*``) and the RNG state
(``rng.*``).
"""

from __future__ import annotations

import json
import math
from typing import Any

import torch
from safetensors.torch import save as st_save

from attnviz.core.training.checkpoint import MAX_COUNT, STATE_JSON, STATE_TENSORS, optimizer_state_from_files, optimizer_state_to_files
from attnviz.core.training.epochs import WeightAverage


def param_names(model: torch.nn.Module) -> list[str]:
    """The names of the optimiser's parameters, in its order (``model.parameters()``'s)."""
    return [name for name, _ in model.named_parameters()]


def tagged(tensors: dict[str, torch.Tensor], prefix: str) -> dict[str, torch.Tensor]:
    """The saved tensors whose names start with ``prefix`` ("rng.", "raw."), under the rest of their names."""
    return {k[len(prefix):]: v for k, v in tensors.items() if k.startswith(prefix)}


def state_files(info: dict[str, Any], optimizer: torch.optim.Optimizer, model: torch.nn.Module, average: WeightAverage,
                raw: dict[str, torch.Tensor], device: torch.device) -> dict[str, bytes]:
    """The two side files of a checkpoint: ``info`` (counters and options) with the optimiser and
    averaging state added, and the tensors, ``raw`` being the weights as trained."""
    tensors, opt_info = optimizer_state_to_files(optimizer, param_names(model))
    tensors.update(average.state_tensors())
    tensors.update({f"raw.{name}": t for name, t in raw.items()})  # the bundle stores float16: a resumed run needs these
    tensors["rng.cpu"] = torch.get_rng_state()
    if torch.cuda.is_available() and device.type == "cuda":
        tensors["rng.cuda"] = torch.cuda.get_rng_state(device)
    info = {**info, "optimizer": opt_info, "averaged_epochs": average.n, "averaged_from": average.first}
    return {STATE_TENSORS: st_save(unshared(tensors)), STATE_JSON: json.dumps(info, indent=1).encode()}


def unshared(tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``tensors`` with every one that shares memory with an earlier one copied (a tied output
    layer is the target embedding under a second name; safetensors refuses shared memory)."""
    seen: set[int] = set()
    out = {}
    for name, t in tensors.items():
        ptr = t.untyped_storage().data_ptr()
        out[name] = t.clone() if ptr in seen and t.numel() else t
        seen.add(ptr)
    return out


def restore_optimizer(optimizer: torch.optim.Optimizer, model: torch.nn.Module, info: dict[str, Any], tensors: dict[str, torch.Tensor]) -> None:
    """Load the saved optimiser state (``info``: training_state.json's "optimizer") into
    ``optimizer``, matched to ``model``'s parameters by name; ``ValueError`` (or ``KeyError``,
    ``TypeError``, ``IndexError``, ``RuntimeError``) when it does not fit."""
    state = optimizer_state_from_files(tensors, info, param_names(model))
    check_moments(state, model)
    optimizer.load_state_dict(state)


def check_moments(state: dict[str, Any], model: torch.nn.Module) -> None:
    """``ValueError`` unless every saved optimiser tensor fits its parameter (Adam's moments
    have the parameter's shape; its step count is a single number)."""
    params = list(model.parameters())
    for pid, entries in state["state"].items():
        for key, value in entries.items():
            if not torch.is_tensor(value):
                ok = (isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) <= MAX_COUNT
                      and (isinstance(value, int) or math.isfinite(value)))  # an int may be too large for a float
            else:
                ok = value.is_floating_point() and value.shape == (() if key == "step" else params[pid].shape)
            if not ok:
                raise ValueError(f"the optimiser state '{key}' of {param_names(model)[pid]} does not fit the model")


def restore_rng(rng: dict[str, torch.Tensor], device: torch.device) -> None:
    """Continue the random streams ``rng`` (the ``rng.*`` tensors, ``tagged``) saved."""
    torch.set_rng_state(rng["cpu"])
    if "cuda" in rng and device.type == "cuda":
        torch.cuda.set_rng_state(rng["cuda"], device)
