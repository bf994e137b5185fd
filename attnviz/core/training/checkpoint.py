"""The training state saved next to a checkpoint's bundle: the side files' names and the
optimiser state as safetensors tensors plus JSON (no pickle). No Qt."""

from __future__ import annotations

from typing import Any

import torch

STATE_TENSORS = "training_state.safetensors"
STATE_JSON = "training_state.json"


def optimizer_state_to_files(opt: torch.optim.Optimizer, param_names: list[str]) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """The optimiser's state as (tensors named ``optimizer.<param>.<key>``, JSON-able rest).
    ``param_names`` names the optimiser's parameters in order, so a resume can match them by name."""
    sd = opt.state_dict()
    tensors: dict[str, torch.Tensor] = {}
    scalars: dict[str, dict[str, Any]] = {}
    for pid, st in sd["state"].items():
        for k, v in st.items():
            if torch.is_tensor(v):
                tensors[f"optimizer.{pid}.{k}"] = v.detach().cpu().contiguous()
            else:
                scalars.setdefault(str(pid), {})[k] = v
    groups = [{k: (list(v) if isinstance(v, tuple) else v) for k, v in g.items()} for g in sd["param_groups"]]
    return tensors, {"param_groups": groups, "scalars": scalars, "param_names": list(param_names)}


def optimizer_state_from_files(tensors: dict[str, torch.Tensor], info: dict[str, Any], param_names: list[str]) -> dict[str, Any]:
    """The inverse of ``optimizer_state_to_files``: a state dict for ``Optimizer.load_state_dict``
    whose entries follow ``param_names`` (the model's parameters now), matched by name.

    Raises ``ValueError`` when the saved state cannot be matched to these parameters by name
    (a checkpoint saved before names were recorded, or of another model).
    """
    order = _saved_order(info, param_names)
    state: dict[int, dict[str, Any]] = {}
    for name, t in tensors.items():
        if name.startswith("optimizer."):
            _, pid, k = name.split(".", 2)
            state.setdefault(order[int(pid)], {})[k] = t
    for pid, sc in info.get("scalars", {}).items():
        state.setdefault(order[int(pid)], {}).update(sc)
    groups = []
    for g in info["param_groups"]:
        g = dict(g)
        if "betas" in g:
            g["betas"] = tuple(g["betas"])
        groups.append(g)
    return {"state": state, "param_groups": groups}


def _saved_order(info: dict[str, Any], param_names: list[str]) -> dict[int, int]:
    """Saved parameter index -> index of the same parameter in ``param_names``."""
    saved = info.get("param_names")
    if not isinstance(saved, list):
        raise ValueError("the checkpoint does not name its optimiser's parameters (saved by an older attnviz): "
                         "it opens as a model, but training cannot resume from it")
    if sorted(saved) != sorted(param_names):
        raise ValueError("the checkpoint's optimiser state is for other parameters than this model's")
    where = {name: i for i, name in enumerate(param_names)}
    return {i: where[name] for i, name in enumerate(saved)}
