"""One PyTorch train step with ls2c's optimizer conventions (lib/Transforms/TrainStep.cpp).

    - mixed precision: the model's `dtype` fp16 or bf16 runs under torch.autocast with fp32
      parameters (ls2c keeps an fp32 master copy and casts it); fp16 adds dynamic loss scaling
      with GradScaler's defaults, which ls2c copies (initial scale 65536, halved on an inf/NaN
      gradient, doubled after 2000 clean steps);
    - clipping: torch.nn.utils.clip_grad_norm_ over all gradients (coefficient
      min(1, clip_norm / (norm + 1e-6))), after unscaling; off when clip_norm is 0;
    - optimizer: torch.optim.AdamW (`adamw`, decoupled decay) or torch.optim.Adam (`adam`, L2
      decay added to the clipped gradient), bias-corrected, eps added to sqrt(v_hat), weight decay
      only on weight_decayed() parameters; fused kernels on CUDA;
    - schedule: LambdaLR with model-description.md's formula of s = updates already made (the
      first warmup update uses lr 0); a step skipped for an inf/NaN gradient makes no update and
      does not advance the schedule (ls2c's step counter stays).
"""
import math

import torch

from torch_models import DTYPES, weight_decayed


def lr_factor(c, s):
    """Learning rate of update s (0-based) divided by the peak lr, model-description.md."""
    sc = c["optimizer"]["schedule"]
    w, T, r = sc["warmup_steps"], sc["total_steps"], sc["min_lr_ratio"]
    if s < w:
        return s / w
    kind = sc["type"]
    if kind == "constant":
        return 1.0
    if kind in ("linear", "cosine") and T <= w:
        return r  # a decay of no length: at its end after warmup
    if kind == "linear":
        return r + (1 - r) * max(0, T - s) / (T - w)
    if kind == "cosine":
        return r + (1 - r) * 0.5 * (1 + math.cos(math.pi * min(1.0, (s - w) / (T - w))))
    if kind == "inverse_sqrt":
        return math.sqrt(w / s)
    raise ValueError(kind)


class TrainStep:
    """Optimizer, schedule, scaler and autocast for `model` (torch_models.Model) under
    description `c`. step(batch) runs zero_grad, forward and backward, clipping, the update and
    the schedule; it returns the loss (fp32 scalar tensor, on the device) without synchronizing.
    With track=True it also records (loss, grad_norm, lr, skipped) per step in self.history
    (Python floats: this synchronizes). `forward` may be a torch.compile'd model."""

    def __init__(self, model, c, forward=None, fused=None, track=False, grad_hook=None):
        self.model, self.c = model, c
        self.grad_hook = grad_hook  # called with the model once, on the first step's unscaled gradients
        self.forward = model if forward is None else forward
        self.track, self.history = track, []
        self.amp = DTYPES[c["dtype"]] if c["dtype"] != "fp32" else None
        dev = next(model.parameters()).device
        self.device_type = dev.type
        opt = c["optimizer"]
        named = model.named_reference_parameters()
        groups = [{"params": [p for n, p in named if weight_decayed(n)], "weight_decay": opt["weight_decay"]},
                  {"params": [p for n, p in named if not weight_decayed(n)], "weight_decay": 0.0}]
        self.params = [p for _, p in named]
        fused = dev.type == "cuda" if fused is None else fused
        cls = torch.optim.AdamW if opt["type"] == "adamw" else torch.optim.Adam
        self.opt = cls(groups, lr=opt["lr"], betas=tuple(opt["betas"]), eps=opt["eps"],
                       **({"fused": True} if fused else {"foreach": False}))
        self.sched = torch.optim.lr_scheduler.LambdaLR(self.opt, lambda s: lr_factor(c, s))
        self.scaler = None
        if c["dtype"] == "fp16":
            self.scaler = torch.amp.GradScaler(self.device_type, init_scale=65536.0, growth_factor=2.0,
                                               backoff_factor=0.5, growth_interval=2000)

    def step(self, batch):
        c = self.c
        self.opt.zero_grad(set_to_none=True)
        with torch.autocast(self.device_type, dtype=self.amp or torch.float32, enabled=self.amp is not None):
            loss = self.forward(batch)
        lr = self.opt.param_groups[0]["lr"]
        if self.scaler is not None:
            self.scaler.scale(loss).backward()
            self.scaler.unscale_(self.opt)
        else:
            loss.backward()
        if self.grad_hook is not None:
            self.grad_hook(self.model)
            self.grad_hook = None
        clip = c["optimizer"]["clip_norm"]
        norm = None
        if clip > 0:
            norm = torch.nn.utils.clip_grad_norm_(self.params, clip)
        elif self.track:
            norm = torch.linalg.vector_norm(torch.stack(
                [torch.linalg.vector_norm(p.grad.float()) for p in self.params if p.grad is not None]))
        if self.scaler is not None:
            scale = self.scaler.get_scale() if self.track else None
            self.scaler.step(self.opt)
            self.scaler.update()
            skipped = self.track and self.scaler.get_scale() < scale
        else:
            self.opt.step()
            skipped = False
        if not skipped:
            self.sched.step()
        if self.track:
            self.history.append((float(loss.detach()), float(norm), lr, bool(skipped)))
        return loss
