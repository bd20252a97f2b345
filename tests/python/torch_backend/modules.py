"""Small real torch.nn modules for the torch backend's tests (tiny shapes: CI time)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class GPTBlock(nn.Module):
    """GPT-2 style pre-norm block with causal scaled_dot_product_attention (dropout_p=dropout in
    training, as nanoGPT's flash path)."""

    def __init__(self, d=16, heads=2, dropout=0.0):
        super().__init__()
        self.heads, self.dropout = heads, dropout
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                           dropout_p=self.dropout if self.training else 0.0)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.fc2(F.gelu(self.fc(self.ln2(x))))


class HandAttention(nn.Module):
    """Causal self-attention written out by hand (nanoGPT style): q @ k^T times 1/sqrt(d), the
    future masked with -inf, the softmax as amax / sub / exp / sum / div, then @ v."""

    def __init__(self, d=16, heads=2):
        super().__init__()
        self.heads = heads
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / (c // self.heads) ** 0.5)
        future = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
        att = att.masked_fill(future, float("-inf"))
        att = (att - att.amax(dim=-1, keepdim=True)).exp()
        att = att / att.sum(dim=-1, keepdim=True)
        return self.proj((att @ v).transpose(1, 2).reshape(b, t, c))


class GPTDropoutBlock(nn.Module):
    """GPT-2 style block with nanoGPT's written-out causal attention and dropout of the attention
    probabilities (softmax -> nn.Dropout -> @ v), for training with dropout."""

    def __init__(self, d=16, heads=2, p=0.2):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.attn_dropout = nn.Dropout(p)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / (c // self.heads) ** 0.5)
        future = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
        att = self.attn_dropout(F.softmax(att.masked_fill(future, float("-inf")), dim=-1))
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, c))
        return x + self.fc2(F.gelu(self.fc(self.ln2(x))))


class BasicBlock(nn.Module):
    """ResNet BasicBlock (identity shortcut)."""

    def __init__(self, c=4):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)

    def forward(self, x):
        return F.relu(x + self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x))))))


class ConvNeXtBlock(nn.Module):
    """Depthwise 7x7 conv, channels-last LayerNorm, inverted MLP, layer scale."""

    def __init__(self, c=8):
        super().__init__()
        self.dw = nn.Conv2d(c, c, 7, padding=3, groups=c)
        self.ln = nn.LayerNorm(c)
        self.pw1, self.pw2 = nn.Linear(c, 4 * c), nn.Linear(4 * c, c)
        self.gamma = nn.Parameter(torch.full((c,), 0.1))

    def forward(self, x):
        y = self.dw(x).permute(0, 2, 3, 1)
        y = self.pw2(F.gelu(self.pw1(self.ln(y))))
        return x + (self.gamma * y).permute(0, 3, 1, 2)


class UNetResBlock(nn.Module):
    """Diffusion-UNet residual block: GroupNorm, SiLU, time embedding, nearest upsampling."""

    def __init__(self, c=8, t=16):
        super().__init__()
        self.n1, self.n2 = nn.GroupNorm(4, c), nn.GroupNorm(4, c)
        self.c1, self.c2 = nn.Conv2d(c, c, 3, padding=1), nn.Conv2d(c, c, 3, padding=1)
        self.temb = nn.Linear(t, c)

    def forward(self, x, t):
        h = self.c1(F.silu(self.n1(x))) + self.temb(F.silu(t))[:, :, None, None]
        h = self.c2(F.silu(self.n2(h)))
        return F.interpolate(x + h, scale_factor=2, mode="nearest")


class MixerBlock(nn.Module):
    def __init__(self, patches=4, c=8):
        super().__init__()
        self.n1, self.n2 = nn.LayerNorm(c), nn.LayerNorm(c)
        self.t1, self.t2 = nn.Linear(patches, 2 * patches), nn.Linear(2 * patches, patches)
        self.c1, self.c2 = nn.Linear(c, 2 * c), nn.Linear(2 * c, c)

    def forward(self, x):
        y = self.n1(x).transpose(1, 2)
        x = x + self.t2(F.gelu(self.t1(y))).transpose(1, 2)
        return x + self.c2(F.gelu(self.c1(self.n2(x))))


class EmbeddingLM(nn.Module):
    """Embedding, a tanh layer, the tied head, cross-entropy."""

    def __init__(self, vocab=32, d=16):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.lin = nn.Linear(d, d)

    def forward(self, idx, target):
        h = torch.tanh(self.lin(self.emb(idx)))
        logits = h @ self.emb.weight.t()
        return F.cross_entropy(logits.reshape(-1, logits.size(-1)), target.reshape(-1))


def mlp():
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))


def transformer_encoder_layer():
    return nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
