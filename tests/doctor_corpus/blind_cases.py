"""Blind cases for the training doctor: real bugs from public threads, reduced by someone who has
not read the doctor's checks (only its public entry, its codes and its corpus format).

Same format as :mod:`.cases`: every case is a bug reported in a public thread (address in a
comment and in ``source``), reduced to a small CPU program written for this file (no code copied
from the thread). ``buggy`` has the bug, ``fixed`` the fix the thread confirmed; both build fresh,
seeded objects on every call and return ``(model, loss_fn, optimizer, batch, train_step)``.

``expected`` is the code that names the cause, written from what the thread says before the doctor
was run on the case. ``OUT_OF_SCOPE`` marks a real bug that no code describes (the reason is in the
comment); the doctor must then only run cleanly on it.

A learning-rate scheduler bound to the optimizer is exposed either as ``optimizer.scheduler`` or as
``train_step.scheduler`` (the step also holds it in a closure), so that a test can check that the
doctor left it as it found it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from .cases import Case

Setup = tuple[nn.Module, Any, torch.optim.Optimizer, Any, Callable | None]

OUT_OF_SCOPE = "OUT_OF_SCOPE"


def _g(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _plain_step(model: nn.Module, batch: Any, optimizer: torch.optim.Optimizer, loss_fn: Any) -> float:
    x, y = batch
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


# --- B1. ReLU applied to the classifier's logits ------------------------------------------------------
# https://github.com/hunkim/PyTorchZeroToAll/pull/4 ("Remove relu in the final layer"): the MNIST
# classifier of the lecture returned F.relu(self.l5(x)) into CrossEntropyLoss; the merged PR returns the
# last linear layer's output. Trained with plain SGD(lr=0.01, momentum=0.5), as in the lecture.

class _FiveLayer(nn.Module):
    def __init__(self, relu_out: bool) -> None:
        super().__init__()
        self.relu_out = relu_out
        self.l1, self.l2, self.l3 = nn.Linear(64, 48), nn.Linear(48, 32), nn.Linear(32, 24)
        self.l4, self.l5 = nn.Linear(24, 16), nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.view(-1, 64)
        for layer in (self.l1, self.l2, self.l3, self.l4):
            x = F.relu(layer(x))
        logits = self.l5(x)
        return F.relu(logits) if self.relu_out else logits


def _digits(n: int = 64, seed: int = 100) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.rand(n, 1, 8, 8, generator=_g(seed))
    y = (x.view(n, 64) @ torch.randn(64, 10, generator=_g(seed + 1))).argmax(1)
    return (x - 0.5) / 0.29, y


def _relu_logits(fixed: bool) -> Setup:
    torch.manual_seed(101)
    model = _FiveLayer(relu_out=not fixed)
    return model, nn.CrossEntropyLoss(), torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.5), _digits(), None


# --- B2. dense embeddings with Adam keep moving rows that are not in the batch (OUT OF SCOPE) ----------
# https://github.com/pytorch/pytorch/issues/18404 : with Adam, embedding rows whose gradient is zero in
# this batch still change (the moment estimates keep moving them); the maintainers' answer: use
# nn.Embedding(sparse=True) with torch.optim.SparseAdam, which updates only the rows in the batch.
# Out of scope: on one batch, trained on that same batch, every row that moves is a row of the batch, so
# no probe of one batch can see it. The fix is a correct but unusual setup (sparse gradients, SparseAdam).

class _MF(nn.Module):
    def __init__(self, sparse: bool, users: int = 30, items: int = 40, dim: int = 8) -> None:
        super().__init__()
        self.users = nn.Embedding(users, dim, sparse=sparse)
        self.items = nn.Embedding(items, dim, sparse=sparse)

    def forward(self, pairs: torch.Tensor) -> torch.Tensor:
        return (self.users(pairs[:, 0]) * self.items(pairs[:, 1])).sum(dim=1)


def _sparse_mf(fixed: bool) -> Setup:
    torch.manual_seed(102)
    model = _MF(sparse=fixed)
    pairs = torch.stack([torch.randint(0, 30, (64,), generator=_g(103)),
                         torch.randint(0, 40, (64,), generator=_g(104))], dim=1)
    ratings = ((pairs[:, 0] % 5) - (pairs[:, 1] % 3)).float() / 2
    optimizer = (torch.optim.SparseAdam(list(model.parameters()), lr=0.05) if fixed
                 else torch.optim.Adam(model.parameters(), lr=0.05))
    return model, nn.MSELoss(), optimizer, (pairs, ratings), None


# --- B3. GAN: the generator's output not detached for the discriminator step --------------------------
# https://github.com/pytorch/examples/issues/116 : without fake.detach() in the discriminator step the DCGAN
# loop fails with "Trying to backward through the graph a second time" when the generator's loss is
# back-propagated; the example detaches (one generator forward pass, reused by both steps).
# The fixed program is a correct GAN step: one optimizer with a parameter group per network, each update
# clearing the other network's gradients; its losses do not simply go down.

class _GAN(nn.Module):
    def __init__(self, z: int = 4) -> None:
        super().__init__()
        self.G = nn.Sequential(nn.Linear(z, 16), nn.ReLU(), nn.Linear(16, 2))
        self.D = nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))


def _gan_step(detach: bool) -> Callable:
    def train_step(model, batch, optimizer, loss_fn):
        real, noise = batch
        ones, zeros = torch.ones(len(real), 1), torch.zeros(len(real), 1)
        fake = model.G(noise)
        # (1) discriminator
        optimizer.zero_grad()
        d_loss = loss_fn(model.D(real), ones) + loss_fn(model.D(fake.detach() if detach else fake), zeros)
        d_loss.backward()
        for p in model.G.parameters():
            p.grad = None
        optimizer.step()
        # (2) generator, reusing the same fake batch
        optimizer.zero_grad()
        g_loss = loss_fn(model.D(fake), ones)
        g_loss.backward()
        for p in model.D.parameters():
            p.grad = None
        optimizer.step()
        return g_loss.item()
    return train_step


def _gan(fixed: bool) -> Setup:
    torch.manual_seed(105)
    model = _GAN()
    optimizer = torch.optim.Adam([{"params": model.G.parameters()}, {"params": model.D.parameters()}],
                                 lr=2e-3, betas=(0.5, 0.999))
    real = torch.randn(64, 2, generator=_g(106)) * 0.3 + torch.tensor([2.0, -1.0])
    noise = torch.randn(64, 4, generator=_g(107))
    return model, nn.BCEWithLogitsLoss(), optimizer, (real, noise), _gan_step(detach=fixed)


# --- B4. StepLR stepped every batch instead of every epoch ------------------------------------------------
# https://github.com/Lornatang/SRGAN-PyTorch/issues/1 : StepLR(step_size=epochs // 2, gamma=0.1) was
# stepped after every training batch, so the learning rate became almost zero after a few steps and the
# model did not train; the maintainer moved scheduler.step() to the end of the epoch.
# The scheduler lives in the step's closure (bound to the caller's optimizer).

def _sr_step(optimizer: torch.optim.Optimizer, per_batch: bool, batches_per_epoch: int = 200) -> Callable:
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.1)  # epochs = 4
    seen = {"batches": 0}

    def train_step(model, batch, optimizer, loss_fn):
        low, high = batch
        optimizer.zero_grad()
        loss = loss_fn(model(low), high)
        loss.backward()
        optimizer.step()
        seen["batches"] += 1
        if per_batch or seen["batches"] % batches_per_epoch == 0:
            scheduler.step()
        return loss.item()
    train_step.scheduler = scheduler
    return train_step


def _srnet(fixed: bool) -> Setup:
    torch.manual_seed(108)
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.PReLU(), nn.Conv2d(16, 12, 3, padding=1),
                          nn.PixelShuffle(2))
    high = torch.rand(16, 3, 16, 16, generator=_g(109))
    low = F.avg_pool2d(high, 2)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    return model, nn.MSELoss(), optimizer, (low, high), _sr_step(optimizer, per_batch=not fixed)


# --- B5. BCEWithLogitsLoss with integer (long) sentiment labels ---------------------------------------------
# https://github.com/PacktPublishing/Mastering-PyTorch/issues/4 : the chapter's RNN sentiment model failed
# with "result type Float can't be cast to the desired output type Long"; the answer: the loss expects
# float targets, call loss_func(preds, sentiment.float()). The fix is a single-output binary classifier
# trained on 0./1. float targets.

class _SentimentRNN(nn.Module):
    def __init__(self, vocab: int = 50, dim: int = 16) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab, dim)
        self.rnn = nn.RNN(dim, 24, batch_first=True)
        self.fc = nn.Linear(24, 1)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        _, h = self.rnn(self.embedding(tokens))
        return self.fc(h[-1]).squeeze(1)


def _sentiment(fixed: bool) -> Setup:
    torch.manual_seed(110)
    model = _SentimentRNN()
    tokens = torch.randint(0, 50, (48, 10), generator=_g(111))
    labels = (tokens < 25).sum(dim=1).gt(5).long()
    return (model, nn.BCEWithLogitsLoss(), torch.optim.Adam(model.parameters(), lr=5e-3),
            (tokens, labels.float() if fixed else labels), None)


# --- B6. in-place ReLU on a tensor the skip branch still needs ------------------------------------------------
# https://github.com/osmr/imgclsmob/issues/13 : Xception blocks applied nn.ReLU(inplace=True) to the block
# input that the skip convolution had already used, so backward() raised "one of the variables needed for
# gradient computation has been modified by an inplace operation"; removing inplace=True fixes it.

class _XceptionBlock(nn.Module):
    def __init__(self, cin: int, cout: int, inplace: bool) -> None:
        super().__init__()
        self.skip = nn.Sequential(nn.Conv2d(cin, cout, 1, bias=False), nn.BatchNorm2d(cout))
        self.rep = nn.Sequential(nn.ReLU(inplace=inplace), nn.Conv2d(cin, cout, 3, padding=1, bias=False),
                                 nn.BatchNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        skip = self.skip(x)
        return self.rep(x) + skip


class _TinyXception(nn.Module):
    def __init__(self, inplace: bool) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8))
        self.block = _XceptionBlock(8, 16, inplace)
        self.head = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.block(self.stem(x)).mean(dim=(2, 3)))


def _xception(fixed: bool) -> Setup:
    torch.manual_seed(112)
    model = _TinyXception(inplace=not fixed)
    x = torch.rand(16, 3, 12, 12, generator=_g(113)) * 2 - 1
    y = (x.mean(dim=(2, 3)) @ torch.randn(3, 4, generator=_g(114))).argmax(1)
    return model, nn.CrossEntropyLoss(), torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9), (x, y), None


# --- B7. contrastive loss: sqrt of a zero distance gives NaN gradients ----------------------------------------------
# https://github.com/adambielski/siamese-triplet/issues/18 : the siamese (contrastive) loss took the square
# root of the squared distance; for two identical samples the distance is 0, the derivative of sqrt there is
# infinite and the gradients became NaN; the maintainer added a small epsilon inside the square root.
# The batch is (first, second, same) with one exact duplicate pair; the loss takes three arguments.

def _contrastive_pairs(eps: float) -> Callable:
    def contrastive(out1: torch.Tensor, out2: torch.Tensor, same: torch.Tensor, margin: float = 1.0) -> torch.Tensor:
        distances = (out2 - out1).pow(2).sum(dim=1)
        return 0.5 * (same * distances + (1 - same) * F.relu(margin - (distances + eps).sqrt()).pow(2)).mean()
    return contrastive


def _siamese_step(model, batch, optimizer, loss_fn):
    first, second, same = batch
    optimizer.zero_grad()
    loss = loss_fn(model(first), model(second), same)
    loss.backward()
    optimizer.step()
    return loss.item()


def _siamese(fixed: bool) -> Setup:
    torch.manual_seed(115)
    model = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 2))
    first = torch.randn(48, 12, generator=_g(116))
    second = torch.randn(48, 12, generator=_g(117))
    same = (torch.arange(48) % 2).float()
    second[same.bool()] = first[same.bool()] + 0.3 * second[same.bool()]
    second[1] = first[1]  # the same image twice in one pair
    return model, _contrastive_pairs(1e-9 if fixed else 0.0), torch.optim.Adam(model.parameters(), lr=1e-2), \
        (first, second, same), _siamese_step


# --- B8. validation switches the encoders to eval mode in the middle of the epoch ----------------------------
# https://github.com/fartashf/vsepp/issues/4 : validate() called model.val_start() (eval mode for the image
# and text encoders) every val_step iterations, and model.train_start() only ran at the next epoch, so
# dropout and batch norm were off for most of training; the fix calls train_start() after validation.
# A visual-semantic embedding with a dict batch and a hinge loss between the two embeddings.

class _VSE(nn.Module):
    def __init__(self, vocab: int = 40, dim: int = 16) -> None:
        super().__init__()
        self.img_enc = nn.Sequential(nn.Linear(32, dim), nn.BatchNorm1d(dim), nn.Dropout(0.3))
        self.embed = nn.Embedding(vocab, dim)
        self.txt_enc = nn.GRU(dim, dim, batch_first=True)
        self.txt_drop = nn.Dropout(0.3)

    def forward(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        img = F.normalize(self.img_enc(batch["images"]), dim=1)
        _, h = self.txt_enc(self.embed(batch["captions"]))
        return img, F.normalize(self.txt_drop(h[-1]), dim=1)


def _contrastive(img: torch.Tensor, cap: torch.Tensor, margin: float = 0.2) -> torch.Tensor:
    scores = img @ cap.t()
    diagonal = scores.diag()[:, None]
    off = ~torch.eye(len(scores), dtype=torch.bool)
    cost_c = (margin + scores - diagonal).clamp(min=0)[off]
    cost_i = (margin + scores - diagonal.t()).clamp(min=0)[off]
    return cost_c.mean() + cost_i.mean()


def _vse_step(train_start: bool) -> Callable:
    def train_step(model, batch, optimizer, loss_fn):
        if train_start:
            model.train()
        optimizer.zero_grad()
        img, cap = model(batch)
        loss = loss_fn(img, cap)
        loss.backward()
        optimizer.step()
        return loss.item()
    return train_step


def _vse(fixed: bool) -> Setup:
    torch.manual_seed(118)
    model = _VSE()
    captions = torch.randint(0, 40, (32, 7), generator=_g(119))
    images = F.one_hot(captions[:, 0], 40).float()[:, :32] + 0.1 * torch.randn(32, 32, generator=_g(120))
    model.eval()  # model.val_start() in validate()
    return (model, _contrastive, torch.optim.Adam(model.parameters(), lr=2e-3),
            {"images": images, "captions": captions}, _vse_step(train_start=fixed))


# --- B9. "unfreezing" with a requires_grad attribute on the module ---------------------------------------------
# https://github.com/CSCYQJ/MICCAI23-ProtoContra-SFDA/issues/18 : `self.model.outc.requires_grad = False` sets a
# plain attribute on the nn.Module and changes no parameter (see the forum thread it cites,
# https://discuss.pytorch.org/t/requires-grad-doesnt-propagate-to-the-parameters-of-the-module/9979); the
# fix is module.requires_grad_(...) or a loop over its parameters. Here the same no-op setter in the other
# direction: a backbone frozen for the first stage is meant to be unfrozen for fine-tuning and stays frozen
# although the optimizer holds its parameters.

class _SegNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1),
                                      nn.ReLU())
        self.outc = nn.Conv2d(8, 3, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.outc(self.backbone(x))


def _unfreeze(fixed: bool) -> Setup:
    torch.manual_seed(121)
    model = _SegNet()
    model.backbone.requires_grad_(False)  # stage 1: source model frozen
    if fixed:
        model.backbone.requires_grad_(True)
    else:
        model.backbone.requires_grad = True  # a plain attribute: no parameter changes
    x = torch.rand(8, 3, 12, 12, generator=_g(122))
    y = (x * 3).long().clamp(max=2)[:, 0]
    return model, nn.CrossEntropyLoss(), torch.optim.Adam(model.parameters(), lr=1e-2), (x, y), None


# --- B10. depth loss summed over pixels instead of averaged: the loss diverges ---------------------------------------
# https://github.com/irolaina/FCRN-DepthPrediction/issues/47 : with lr=0.01 the depth network learned nothing and
# the loss became huge or NaN; the maintainer's question, "are you dividing each image by the number of valid
# pixels?", names the cause: a loss summed over pixels makes every step that many times larger. The fix
# averages over the valid pixels and trains with the same slow but correct SGD(lr=0.01, momentum=0.9). The
# step is an object that also holds a MultiStepLR stepped once per epoch.

class _EpochStep:
    def __init__(self, scheduler: torch.optim.lr_scheduler.LRScheduler, batches_per_epoch: int = 10) -> None:
        self.scheduler, self.batches_per_epoch, self.batches = scheduler, batches_per_epoch, 0

    def __call__(self, model, batch, optimizer, loss_fn):
        image, depth = batch
        optimizer.zero_grad()
        loss = loss_fn(model(image), depth)
        loss.backward()
        optimizer.step()
        self.batches += 1
        if self.batches % self.batches_per_epoch == 0:
            self.scheduler.step()
        return loss.item()


def _depth_loss(per_pixel: bool) -> Callable:
    def loss_fn(prediction: torch.Tensor, depth: torch.Tensor) -> torch.Tensor:
        valid = depth > 0
        squared = (prediction - depth)[valid] ** 2
        return squared.sum() / valid.sum() if per_pixel else squared.sum() / len(depth)
    return loss_fn


def _fcrn(fixed: bool) -> Setup:
    torch.manual_seed(123)
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(),
                          nn.Conv2d(16, 1, 3, padding=1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[2, 4], gamma=0.1)
    image = torch.rand(16, 3, 24, 24, generator=_g(124))
    depth = image.mean(dim=1, keepdim=True) * 4 + 1
    return model, _depth_loss(per_pixel=fixed), optimizer, (image, depth), _EpochStep(scheduler)


# --- B11. layer weights kept in a plain dict -------------------------------------------------------------------
# https://github.com/xiaxin1998/COTREC/issues/15 : the weights of ItemConv/SessConv were collected in a normal
# Python dict instead of an nn.ModuleDict/ModuleList, so parameters() did not list them and they were never
# trained; the authors switched to nn.ModuleList.

class _ItemConv(nn.Module):
    def __init__(self, items: int = 30, dim: int = 16, layers: int = 2, registered: bool = True) -> None:
        super().__init__()
        self.embedding = nn.Embedding(items, dim)
        weights = {f"weight_item{i}": nn.Linear(dim, dim, bias=False) for i in range(layers)}
        self.w_item = nn.ModuleDict(weights) if registered else weights
        adjacency = (torch.rand(items, items, generator=_g(126)) > 0.8).float()
        self.register_buffer("adjacency", adjacency / adjacency.sum(dim=1, keepdim=True).clamp(min=1))

    def forward(self, sessions: torch.Tensor) -> torch.Tensor:
        h = self.embedding.weight
        for layer in self.w_item.values():
            h = self.adjacency @ layer(h)
        session = h[sessions].mean(dim=1)
        return session @ h.t()


def _cotrec(fixed: bool) -> Setup:
    torch.manual_seed(127)
    model = _ItemConv(registered=fixed)
    sessions = torch.randint(0, 30, (48, 5), generator=_g(128))
    nxt = (sessions[:, -1] + 1) % 30
    return model, nn.CrossEntropyLoss(), torch.optim.Adam(model.parameters(), lr=1e-2), (sessions, nxt), None


# --- B12. the VAE's optimizer only gets the encoder's parameters ------------------------------------------------
# https://github.com/zdebruine/MMVAE/issues/39 : "Shared VAE Optimizer Only Given Encoder Parameters": the
# decoder was never updated; the fix passes the encoder's and the decoder's parameters.

class _VAE(nn.Module):
    def __init__(self, d: int = 20, z: int = 4) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(d, 32), nn.ReLU(), nn.Linear(32, 2 * z))
        self.decoder = nn.Sequential(nn.Linear(z, 32), nn.ReLU(), nn.Linear(32, d))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        mu, logvar = self.encoder(x).chunk(2, dim=1)
        z = mu + torch.randn_like(mu) * (0.5 * logvar).exp()
        return self.decoder(z), mu, logvar


def _vae_step(model, batch, optimizer, loss_fn):
    x = batch[0]
    optimizer.zero_grad()
    recon, mu, logvar = model(x)
    kl = -0.5 * (1 + logvar - mu ** 2 - logvar.exp()).sum(dim=1).mean()
    loss = loss_fn(recon, x) + 0.01 * kl
    loss.backward()
    optimizer.step()
    return loss.item()


def _vae(fixed: bool) -> Setup:
    torch.manual_seed(129)
    model = _VAE()
    x = torch.randn(64, 4, generator=_g(130)) @ torch.randn(4, 20, generator=_g(131))
    params = model.parameters() if fixed else model.encoder.parameters()
    return model, nn.MSELoss(), torch.optim.Adam(params, lr=1e-2), (x,), _vae_step


# --- B13. a one-output regression head against four targets --------------------------------------------------------
# https://github.com/mlcommons/GaNDLF/issues/134 : "Bug in regression causing different output size to get
# broadcasted": the model's output size differed from the target's, MSELoss warned "Using a target size ...
# different to the input size" and broadcast; the fix makes the head's width match the targets.
# Reduced here to its most common form: a head of width 1, four regression targets, (N, 1) vs (N, 4).

def _gandlf(fixed: bool) -> Setup:
    torch.manual_seed(132)
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 4 if fixed else 1))
    x = torch.randn(64, 10, generator=_g(133))
    y = x[:, :4] * torch.tensor([1.0, -2.0, 0.5, 3.0]) + 0.1 * x[:, 4:8]
    return model, nn.MSELoss(), torch.optim.Adam(model.parameters(), lr=1e-2), (x, y), None


# --- B14. masked language-model targets -1 without ignore_index=-1 --------------------------------------------------
# https://github.com/karpathy/nanoGPT/issues/323 : nanoGPT calls F.cross_entropy(..., ignore_index=-1) because
# positions that must not be scored carry the target -1; ignore_index=N skips targets equal to N. Without it
# the same targets raise "Target -1 is out of bounds". The fix (nanoGPT's own code) is the unusual but
# correct masked loss.

class _Bigram(nn.Module):
    def __init__(self, vocab: int = 16, dim: int = 24) -> None:
        super().__init__()
        self.vocab = vocab
        self.tok = nn.Embedding(vocab, dim)
        self.lm_head = nn.Linear(dim, vocab)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        return self.lm_head(torch.tanh(self.tok(idx)))


def _lm_step(model, batch, optimizer, loss_fn):
    idx, targets = batch
    optimizer.zero_grad(set_to_none=True)
    logits = model(idx)
    loss = loss_fn(logits.view(-1, logits.size(-1)), targets.view(-1))
    loss.backward()
    optimizer.step()
    return loss.item()


def _nanogpt(fixed: bool) -> Setup:
    torch.manual_seed(134)
    model = _Bigram()
    idx = torch.randint(0, 16, (16, 9), generator=_g(135))
    targets = idx[:, 1:].clone()
    targets[:, :3] = -1  # the prompt positions are not scored
    loss_fn = nn.CrossEntropyLoss(ignore_index=-1) if fixed else nn.CrossEntropyLoss()
    return model, loss_fn, torch.optim.AdamW(model.parameters(), lr=1e-2), (idx[:, :-1], targets), _lm_step


# --- B15. keyword-spotting executor without zero_grad (warm-up scheduler on the optimizer) -------------------------
# https://github.com/wenet-e2e/wekws/issues/72 (fixed in https://github.com/wenet-e2e/wekws/pull/73): the
# executor called backward(), clip_grad_norm_(), optimizer.step() and scheduler.step() but never
# optimizer.zero_grad(); the maintainer called it a bug and the PR added zero_grad before backward().
# The warm-up scheduler is stepped every batch (correct for a warm-up) and hangs on the optimizer.

class _KWS(nn.Module):
    def __init__(self, feats: int = 10, hidden: int = 24, keywords: int = 2) -> None:
        super().__init__()
        self.gru = nn.GRU(feats, hidden, batch_first=True)
        self.classifier = nn.Linear(hidden, keywords)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.gru(x)
        return self.classifier(out).max(dim=1).values  # max-pooling over frames


def _executor_step(zero: bool) -> Callable:
    def train_step(model, batch, optimizer, loss_fn):
        feats, target = batch
        logits = model(feats)
        loss = loss_fn(logits, target)
        if zero:
            optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        optimizer.step()
        optimizer.scheduler.step()
        return loss.item()
    return train_step


def _warmup(step: int, warmup: int = 25) -> float:
    return min(1.0, (step + 1) / warmup)


def _wekws(fixed: bool) -> Setup:
    torch.manual_seed(136)
    model = _KWS()
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    optimizer.scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, _warmup)
    feats = torch.randn(32, 15, 10, generator=_g(137))
    target = torch.stack([feats[:, :, 0].max(dim=1).values > 1.5, feats[:, :, 1].mean(dim=1) > 0], dim=1).float()
    return model, nn.BCEWithLogitsLoss(), optimizer, (feats, target), _executor_step(zero=fixed)


# --- B16. uint8 images normalised with [0, 1] mean/std ------------------------------------------------------------
# https://github.com/NVIDIA/apex/pull/21 : the ImageNet example's fast_collate returned uint8 images, converted
# to float without dividing by 255, then normalised with the ImageNet mean/std given for [0, 1] pixels; the
# PR scales the mean and std by 255. The batch is a dict with a uint8 image tensor; the step normalises.

_MEAN = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
_STD = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)


def _apex_step(scale: float) -> Callable:
    def train_step(model, batch, optimizer, loss_fn):
        images = (batch["image"].float() - _MEAN * scale) / (_STD * scale)
        optimizer.zero_grad()
        loss = loss_fn(model(images), batch["label"])
        loss.backward()
        optimizer.step()
        return loss.item()
    return train_step


def _apex(fixed: bool) -> Setup:
    torch.manual_seed(138)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(2), nn.Flatten(),
                          nn.Linear(32, 5))
    image = torch.randint(0, 256, (32, 3, 16, 16), generator=_g(139), dtype=torch.uint8)
    label = image.float().mean(dim=(2, 3)).argmax(dim=1) + 2 * (image[:, 0, :8].float().mean(dim=(1, 2)) > 127)
    return (model, nn.CrossEntropyLoss(), torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9),
            {"image": image, "label": label}, _apex_step(255.0 if fixed else 1.0))


# --- B17. detector with CLASSES = 1 although the background takes class 0 ------------------------------------------
# https://github.com/johschmidt42/PyTorch-Object-Detection-Faster-RCNN-Tutorial/issues/7 : training raised
# "IndexError: Target 1 is out of bounds"; the objects were labelled 1 because 0 is the background, and the
# maintainer's fix was CLASSES = 2. The targets are a list of dicts (boxes, labels), as in torchvision.

class _TinyDetector(nn.Module):
    def __init__(self, classes: int, anchors: int = 4) -> None:
        super().__init__()
        self.classes, self.anchors = classes, anchors
        self.backbone = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(2),
                                      nn.Flatten())
        self.cls_head = nn.Linear(32, anchors * classes)
        self.box_head = nn.Linear(32, anchors * 4)

    def forward(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        f = self.backbone(images)
        return self.cls_head(f).view(-1, self.anchors, self.classes), self.box_head(f).view(-1, self.anchors, 4)


def _detection_step(model, batch, optimizer, loss_fn):
    images, targets = batch
    scores, deltas = model(images)
    labels = torch.stack([t["labels"] for t in targets])
    boxes = torch.stack([t["boxes"] for t in targets])
    objects = labels > 0
    loss = loss_fn(scores.reshape(-1, scores.size(-1)), labels.reshape(-1)) + \
        F.smooth_l1_loss(deltas[objects], boxes[objects])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()


def _detector(fixed: bool) -> Setup:
    torch.manual_seed(140)
    model = _TinyDetector(classes=2 if fixed else 1)
    images = torch.rand(8, 3, 16, 16, generator=_g(141))
    gen = _g(142)
    targets = [{"boxes": torch.rand(4, 4, generator=gen),
                "labels": (images[i, 0].view(4, 64).mean(dim=1) > 0.5).long()} for i in range(8)]
    return model, nn.CrossEntropyLoss(), torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9), \
        (images, targets), _detection_step


# --- B18. row-by-row MNIST LSTM with batch_first commented out ------------------------------------------------------
# https://github.com/pytorch/pytorch/issues/1538 : "different result on LSTM whether using batch_first": the
# images were fed as (batch, rows, pixels) to an nn.LSTM whose batch_first=True had been commented out, so the
# batch was read as time; the answer: without batch_first the input must be (seq, batch, feature).

class _RowLSTM(nn.Module):
    def __init__(self, batch_first: bool) -> None:
        super().__init__()
        self.lstm = nn.LSTM(8, 32, batch_first=batch_first)
        self.classifier = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.lstm(x.squeeze(1))
        return self.classifier(out[:, -1, :])


def _rows(fixed: bool) -> Setup:
    torch.manual_seed(143)
    model = _RowLSTM(batch_first=fixed)
    x, y = _digits(n=32, seed=144)
    return model, nn.CrossEntropyLoss(), torch.optim.Adam(model.parameters(), lr=1e-2), (x, y), None


# --- B19. BCELoss on a raw nn.Linear output (Ray TorchTrainer) --------------------------------------------------------
# https://github.com/ray-project/ray/issues/17117 : a TrainingOperator with model = nn.Linear(1, 1),
# criterion = nn.BCELoss() and a StepLR scheduler failed with "all elements of input should be between 0 and
# 1": BCELoss needs probabilities, so a sigmoid must follow the linear layer. The scheduler steps every
# batch here and hangs on the optimizer; the fix trains one output on 0./1. float targets.

def _ray_step(model, batch, optimizer, loss_fn):
    x, y = batch
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    optimizer.scheduler.step()
    return loss.item()


def _ray(fixed: bool) -> Setup:
    torch.manual_seed(145)
    model = nn.Sequential(nn.Linear(1, 1), nn.Sigmoid()) if fixed else nn.Linear(1, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    optimizer.scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=5, gamma=0.9)
    x = 3 * torch.randn(64, 1, generator=_g(146))
    return model, nn.BCELoss(), optimizer, (x, (x > 0.3).float()), _ray_step


# --- B20. compressive memory carried across segments with its graph (retain_graph=True) ------------------------------
# https://github.com/jlamprou/Infini-Attention/issues/3 : training segment by segment raised "Trying to
# backward through the graph a second time" and needed retain_graph=True (which costs memory); the author's
# fix detaches the memory M and the normaliser z when they are updated. The fixed program carries state
# across steps correctly detached.

class _MemoryAttention(nn.Module):
    def __init__(self, d: int = 8) -> None:
        super().__init__()
        self.q, self.k, self.v = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.out = nn.Linear(2 * d, 1)

    def forward(self, x: torch.Tensor, memory: torch.Tensor, norm: torch.Tensor):
        q, k, v = F.elu(self.q(x)) + 1, F.elu(self.k(x)) + 1, self.v(x)
        retrieved = (q @ memory) / (q @ norm[..., None]).clamp(min=1e-6)
        local = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(x.size(-1)), dim=-1) @ v
        new_memory = memory + k.transpose(1, 2) @ v
        new_norm = norm + k.sum(dim=1)
        return self.out(torch.cat([retrieved, local], dim=-1)).squeeze(-1), new_memory, new_norm


def _segment_step(detach: bool) -> Callable:
    state: dict[str, torch.Tensor | None] = {"memory": None, "norm": None}

    def train_step(model, batch, optimizer, loss_fn):
        x, y = batch
        d = x.size(-1)
        memory = state["memory"] if state["memory"] is not None else torch.zeros(len(x), d, d)
        norm = state["norm"] if state["norm"] is not None else torch.zeros(len(x), d)
        prediction, memory, norm = model(x, memory, norm)
        state["memory"], state["norm"] = (memory.detach(), norm.detach()) if detach else (memory, norm)
        loss = loss_fn(prediction, y)
        optimizer.zero_grad()
        loss.backward(retain_graph=not detach)
        optimizer.step()
        return loss.item()
    return train_step


def _infini(fixed: bool) -> Setup:
    torch.manual_seed(147)
    model = _MemoryAttention()
    x = torch.randn(8, 6, 8, generator=_g(148))
    y = x[..., 0].cumsum(dim=1) / 3
    return model, nn.MSELoss(), torch.optim.Adam(model.parameters(), lr=1e-2), (x, y), _segment_step(detach=fixed)


# --- B21. evaluate() leaves the dialogue model in eval mode --------------------------------------------------------
# https://github.com/shubhamagarwal92/mmd/issues/14 : evaluate() set model.eval() to disable dropout and
# training went on without model.train(), so dropout stayed off after the first evaluation; the fix adds
# model.train() after evaluate() (here: before the training loop resumes).

class _Utterance(nn.Module):
    def __init__(self, vocab: int = 30, dim: int = 16, classes: int = 4) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab, dim)
        self.dropout = nn.Dropout(0.3)
        self.encoder = nn.GRU(dim, dim, num_layers=2, dropout=0.3, batch_first=True)
        self.out = nn.Linear(dim, classes)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        _, h = self.encoder(self.dropout(self.embedding(tokens)))
        return self.out(h[-1])


def _mmd(fixed: bool) -> Setup:
    torch.manual_seed(149)
    model = _Utterance()
    tokens = torch.randint(0, 30, (32, 8), generator=_g(150))
    labels = tokens[:, 0] % 4
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    _plain_step(model, (tokens, labels), optimizer, nn.CrossEntropyLoss())  # an earlier training step
    model.eval()  # evaluate(...)
    if fixed:
        model.train()
    return model, nn.CrossEntropyLoss(), optimizer, (tokens, labels), None


# --- B22. parameter groups that leave out the tagger head and the CRF transitions ------------------------------------
# https://github.com/zjunlp/HVPNeT/issues/5 : the optimizer was built from parameter groups (encoder with its
# own learning rate, ...) but the crf and fc parameters were never appended to the list, so they were not
# trained; the maintainers confirmed and said parameters.append(params) was missing.

class _Tagger(nn.Module):
    def __init__(self, vocab: int = 30, dim: int = 16, tags: int = 5) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Embedding(vocab, dim), nn.Linear(dim, dim), nn.Tanh())
        self.fc = nn.Linear(dim, tags)
        self.transitions = nn.Parameter(torch.zeros(tags, tags))  # the CRF's pairwise scores

    def forward(self, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.fc(self.encoder(tokens)), self.transitions


def _tagger_step(model, batch, optimizer, loss_fn):
    tokens, tags = batch
    emissions, transitions = model(tokens)
    pairwise = transitions.log_softmax(dim=1)[tags[:, :-1], tags[:, 1:]].mean()
    loss = loss_fn(emissions.transpose(1, 2), tags) - pairwise
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()


def _hvpnet(fixed: bool) -> Setup:
    torch.manual_seed(151)
    model = _Tagger()
    groups = [{"params": model.encoder.parameters(), "lr": 5e-3}]
    if fixed:
        groups.append({"params": [*model.fc.parameters(), model.transitions], "lr": 2e-2})
    tokens = torch.randint(0, 30, (16, 10), generator=_g(152))
    tags = tokens % 5
    return model, nn.CrossEntropyLoss(), torch.optim.AdamW(groups), (tokens, tags), _tagger_step


# --- B23. DANN heads ending in Softmax, trained with CrossEntropyLoss (dict batch, gradient reversal) -------------
# https://github.com/NaJaeMin92/pytorch-DANN/issues/7 : the class classifier and the domain discriminator ended
# in a softmax layer, which made the model hard to train; the maintainer removed it because CrossEntropyLoss
# already applies log-softmax. The discriminator sits behind a gradient reversal layer (a custom
# autograd.Function), the batch is a dict of source images, their labels and target-domain images.

class _GradReverse(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, alpha: float) -> torch.Tensor:
        ctx.alpha = alpha
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        return -ctx.alpha * grad, None


class _DANN(nn.Module):
    def __init__(self, softmax: bool) -> None:
        super().__init__()
        tail = [nn.Softmax(dim=1)] if softmax else []
        self.extractor = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(2), nn.Flatten())
        self.classifier = nn.Sequential(nn.Linear(32, 16), nn.ReLU(), nn.Linear(16, 4), *tail)
        self.discriminator = nn.Sequential(nn.Linear(32, 16), nn.ReLU(), nn.Linear(16, 2), *tail)

    def forward(self, images: torch.Tensor, alpha: float = 0.5) -> tuple[torch.Tensor, torch.Tensor]:
        features = self.extractor(images)
        return self.classifier(features), self.discriminator(_GradReverse.apply(features, alpha))


def _dann_step(model, batch, optimizer, loss_fn):
    source, target = batch["source"], batch["target"]
    images = torch.cat([source, target])
    domains = torch.cat([torch.zeros(len(source)), torch.ones(len(target))]).long()
    class_scores, domain_scores = model(images)
    loss = loss_fn(class_scores[:len(source)], batch["label"]) + loss_fn(domain_scores, domains)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()


def _dann(fixed: bool) -> Setup:
    torch.manual_seed(153)
    model = _DANN(softmax=not fixed)
    source = torch.rand(24, 3, 12, 12, generator=_g(154))
    target = torch.rand(24, 3, 12, 12, generator=_g(155)) * 0.8 + 0.2
    label = source.mean(dim=(2, 3)).argmax(dim=1) + (source[:, 0, :6].mean(dim=(1, 2)) > 0.5).long()
    return (model, nn.CrossEntropyLoss(), torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9),
            {"source": source, "label": label, "target": target}, _dann_step)


# --- B24. (batch, time, notes) scores into CrossEntropyLoss; the fix reshapes inside the loss ------------------------
# https://github.com/tsunrise/everybody-compose/pull/49 ("fix: reshape pred and target in cross entropy loss
# computation"): the prediction is reshaped to (N, C) and the target to (N,), as CrossEntropyLoss expects;
# without it a (batch, time, notes) prediction against (batch, time) targets is rejected ("Expected target
# size"). The fixed program does the reshape inside its loss function.

class _Composer(nn.Module):
    def __init__(self, notes: int = 20, dim: int = 16) -> None:
        super().__init__()
        self.embedding = nn.Embedding(notes, dim)
        self.lstm = nn.LSTM(dim, dim, batch_first=True)
        self.out = nn.Linear(dim, notes)

    def forward(self, melody: torch.Tensor) -> torch.Tensor:
        hidden, _ = self.lstm(self.embedding(melody))
        return self.out(hidden)


def _note_loss(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(pred.reshape(-1, pred.size(-1)), target.reshape(-1))


def _compose(fixed: bool) -> Setup:
    torch.manual_seed(156)
    model = _Composer()
    melody = torch.randint(0, 20, (16, 13), generator=_g(157))
    return (model, _note_loss if fixed else nn.CrossEntropyLoss(), torch.optim.Adam(model.parameters(), lr=1e-2),
            (melody[:, :-1], melody[:, 1:]), None)


# --- B25. float64 NumPy features in linear regression from scratch (hand-written SGD) --------------------------------
# https://github.com/ShusenTang/Dive-into-DL-PyTorch/issues/31 : the from-scratch linear regression raised
# "Expected object of scalar type Double but got scalar type Float": the features came from NumPy as float64
# while the parameters were float32; the fix converts the features (and labels) to float32. The update is
# hand-written (param.data -= lr * grad / batch_size, then grad.data.zero_()), as in the book.

class _LinReg(nn.Module):
    def __init__(self, inputs: int = 2) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(inputs, 1) * 0.01)
        self.b = nn.Parameter(torch.zeros(1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.mm(x, self.w) + self.b


def _sgd_step(lr: float = 0.03) -> Callable:
    def train_step(model, batch, optimizer, loss_fn):
        x, y = batch
        loss = loss_fn(model(x), y.view(-1, 1)).sum()
        loss.backward()
        for param in (model.w, model.b):
            param.data -= lr * param.grad / len(x)
            param.grad.data.zero_()
        return loss.item()
    return train_step


def _squared_loss(y_hat: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return (y_hat - y.view(y_hat.size())) ** 2 / 2


def _linreg(fixed: bool) -> Setup:
    torch.manual_seed(158)
    model = _LinReg()
    g = _g(159)
    features = torch.randn(64, 2, generator=g, dtype=torch.float64)  # as torch.from_numpy(np.random.normal(...))
    labels = 2 * features[:, 0] - 3.4 * features[:, 1] + 4.2 + 0.01 * torch.randn(64, generator=g, dtype=torch.float64)
    if fixed:
        features, labels = features.float(), labels.float()
    return model, _squared_loss, torch.optim.SGD(model.parameters(), lr=0.03), (features, labels), _sgd_step()


BLIND_CASES: list[Case] = [
    Case("ReLU applied to the classifier's logits", "https://github.com/hunkim/PyTorchZeroToAll/pull/4",
         "RELU_ON_OUTPUT", lambda: _relu_logits(False), lambda: _relu_logits(True)),
    Case("dense embeddings + Adam move rows outside the batch", "https://github.com/pytorch/pytorch/issues/18404",
         OUT_OF_SCOPE, lambda: _sparse_mf(False), lambda: _sparse_mf(True)),
    Case("GAN: fake not detached for the discriminator step", "https://github.com/pytorch/examples/issues/116",
         "GRAPH_REUSED", lambda: _gan(False), lambda: _gan(True)),
    Case("StepLR stepped every batch instead of every epoch", "https://github.com/Lornatang/SRGAN-PyTorch/issues/1",
         "CANNOT_OVERFIT_BATCH", lambda: _srnet(False), lambda: _srnet(True)),
    Case("BCEWithLogitsLoss with long sentiment labels", "https://github.com/PacktPublishing/Mastering-PyTorch/issues/4",
         "DTYPE_MISMATCH", lambda: _sentiment(False), lambda: _sentiment(True)),
    Case("in-place ReLU on the input of a skip connection", "https://github.com/osmr/imgclsmob/issues/13",
         "INPLACE_MODIFIED", lambda: _xception(False), lambda: _xception(True)),
    Case("contrastive loss: sqrt of a zero distance (three-tensor batch)",
         "https://github.com/adambielski/siamese-triplet/issues/18",
         "NAN_OR_INF", lambda: _siamese(False), lambda: _siamese(True)),
    Case("validation leaves the encoders in eval mode (dict batch)", "https://github.com/fartashf/vsepp/issues/4",
         "EVAL_MODE_LEFT_ON", lambda: _vse(False), lambda: _vse(True)),
    Case("module.requires_grad = True does not unfreeze",
         "https://github.com/CSCYQJ/MICCAI23-ProtoContra-SFDA/issues/18",
         "NO_GRAD_FLOW", lambda: _unfreeze(False), lambda: _unfreeze(True)),
    Case("depth loss summed over pixels diverges (scheduler in a step object)",
         "https://github.com/irolaina/FCRN-DepthPrediction/issues/47",
         "LR_TOO_HIGH", lambda: _fcrn(False), lambda: _fcrn(True)),
    Case("layer weights kept in a plain dict", "https://github.com/xiaxin1998/COTREC/issues/15",
         "PARAMS_NOT_REGISTERED", lambda: _cotrec(False), lambda: _cotrec(True)),
    Case("VAE optimizer given only the encoder's parameters", "https://github.com/zdebruine/MMVAE/issues/39",
         "PARAM_NOT_IN_OPTIMIZER", lambda: _vae(False), lambda: _vae(True)),
    Case("(N, 1) regression head against (N, 4) targets", "https://github.com/mlcommons/GaNDLF/issues/134",
         "BROADCAST_IN_LOSS", lambda: _gandlf(False), lambda: _gandlf(True)),
    Case("targets masked with -1 but no ignore_index=-1", "https://github.com/karpathy/nanoGPT/issues/323",
         "LABEL_OUT_OF_RANGE", lambda: _nanogpt(False), lambda: _nanogpt(True)),
    Case("keyword-spotting executor without zero_grad (warm-up scheduler)",
         "https://github.com/wenet-e2e/wekws/issues/72",
         "ZERO_GRAD_MISSING", lambda: _wekws(False), lambda: _wekws(True)),
    Case("uint8 images normalised with [0, 1] mean/std (dict batch)", "https://github.com/NVIDIA/apex/pull/21",
         "INPUT_NOT_NORMALIZED", lambda: _apex(False), lambda: _apex(True)),
    Case("detector with one class although 0 is the background (list of dict targets)",
         "https://github.com/johschmidt42/PyTorch-Object-Detection-Faster-RCNN-Tutorial/issues/7",
         "LABEL_OUT_OF_RANGE", lambda: _detector(False), lambda: _detector(True)),
    Case("row-by-row LSTM with batch_first commented out", "https://github.com/pytorch/pytorch/issues/1538",
         "RNN_BATCH_FIRST", lambda: _rows(False), lambda: _rows(True)),
    Case("BCELoss on a raw nn.Linear output (StepLR on the optimizer)",
         "https://github.com/ray-project/ray/issues/17117",
         "BCE_ON_LOGITS", lambda: _ray(False), lambda: _ray(True)),
    Case("compressive memory carried with its graph (retain_graph=True)",
         "https://github.com/jlamprou/Infini-Attention/issues/3",
         "GRAPH_REUSED", lambda: _infini(False), lambda: _infini(True)),
    Case("evaluate() leaves the dialogue model in eval mode", "https://github.com/shubhamagarwal92/mmd/issues/14",
         "EVAL_MODE_LEFT_ON", lambda: _mmd(False), lambda: _mmd(True)),
    Case("parameter groups leave out the tagger head and CRF", "https://github.com/zjunlp/HVPNeT/issues/5",
         "PARAM_NOT_IN_OPTIMIZER", lambda: _hvpnet(False), lambda: _hvpnet(True)),
    Case("DANN heads ending in Softmax with CrossEntropyLoss (dict batch)",
         "https://github.com/NaJaeMin92/pytorch-DANN/issues/7",
         "SOFTMAX_BEFORE_CE", lambda: _dann(False), lambda: _dann(True)),
    Case("(batch, time, notes) scores into CrossEntropyLoss", "https://github.com/tsunrise/everybody-compose/pull/49",
         "TARGET_SHAPE", lambda: _compose(False), lambda: _compose(True)),
    Case("float64 NumPy features, hand-written SGD", "https://github.com/ShusenTang/Dive-into-DL-PyTorch/issues/31",
         "DTYPE_MISMATCH", lambda: _linreg(False), lambda: _linreg(True)),
]
