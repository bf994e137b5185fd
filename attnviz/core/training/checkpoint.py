"""The training state saved next to a checkpoint's bundle: the side files' names and the
optimiser state as safetensors tensors plus JSON (no pickle). No Qt."""

from __future__ import annotations

from typing import Any

import torch

STATE_TENSORS = "training_state.safetensors"
STATE_JSON = "training_state.json"


def _opt_state_to_files(opt: torch.optim.Optimizer) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
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
    return tensors, {"param_groups": groups, "scalars": scalars}


def _opt_state_from_files(tensors: dict[str, torch.Tensor], info: dict[str, Any]) -> dict[str, Any]:
    state: dict[int, dict[str, Any]] = {}
    for name, t in tensors.items():
        if name.startswith("optimizer."):
            _, pid, k = name.split(".", 2)
            state.setdefault(int(pid), {})[k] = t
    for pid, sc in info.get("scalars", {}).items():
        state.setdefault(int(pid), {}).update(sc)
    groups = []
    for g in info["param_groups"]:
        g = dict(g)
        if "betas" in g:
            g["betas"] = tuple(g["betas"])
        groups.append(g)
    return {"state": state, "param_groups": groups}
