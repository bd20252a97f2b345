"""torch.compile(model, backend="stax"): a small GPT-style block trained a few AdamW steps through
Stax (its joint graph, min-cut partitioner and compiled backward), checked against eager.

    PYTHONPATH=build/python .venv/bin/python examples/torch_backend_train.py
"""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

import stax  # registers backend="stax" (the installed package also has the entry point)


class Block(nn.Module):
    def __init__(self, d=32, heads=4):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


def main():
    torch.manual_seed(0)
    eager = Block()
    model = copy.deepcopy(eager)
    compiled = torch.compile(model, backend="stax")
    x, target = torch.randn(4, 16, 32), torch.randn(4, 16, 32)
    opts = [torch.optim.AdamW(m.parameters(), lr=1e-2) for m in (eager, model)]
    print("step  eager loss   stax loss    |diff|")
    for step in range(5):
        losses = []
        for m, opt in zip((eager, compiled), opts):
            opt.zero_grad()
            loss = F.mse_loss(m(x), target)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        print(f"{step:4d}  {losses[0]:.6f}  {losses[1]:.6f}  {abs(losses[0] - losses[1]):.1e}")
        assert abs(losses[0] - losses[1]) <= 1e-4 * abs(losses[0]), "diverged from eager"
    gdiff = max((p.grad - q.grad).abs().max().item()
                for p, q in zip(eager.parameters(), model.parameters()))
    print(f"max |grad difference| after the last step: {gdiff:.1e}")
    print(stax.explain())


if __name__ == "__main__":
    main()
