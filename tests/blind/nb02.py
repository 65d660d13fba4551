"""Blind answers for notebook 02, written from notebooks/02_broadcasting_pitfalls.ipynb only."""
from tests.blind import Answer

ANSWERS = [
    # ------------------------------------------------------------------ 02.per_sample_mse
    Answer("02.per_sample_mse", "ok", '''
        def per_sample_mse(pred, target):
            p = pred.reshape(len(pred), -1)
            t = target.reshape(len(target), -1)
            assert p.shape == t.shape, (p.shape, t.shape)
            return ((p - t) ** 2).mean(dim=1)
    ''', label="reshape both to (N, -1)"),
    Answer("02.per_sample_mse", "ok", '''
        def per_sample_mse(pred, target):
            if pred.dim() == 1:
                pred = pred.unsqueeze(1)
            if target.dim() == 1:
                target = target.unsqueeze(1)
            assert pred.shape == target.shape
            return (pred - target).pow(2).mean(dim=1)
    ''', label="unsqueeze(1) the 1-D ones"),
    Answer("02.per_sample_mse", "ok", '''
        def per_sample_mse(pred, target):
            p = pred if pred.dim() == 2 else pred[:, None]
            t = target if target.dim() == 2 else target[:, None]
            return F.mse_loss(p, t, reduction="none").mean(dim=1)
    ''', label="F.mse_loss(reduction='none') then mean(1)"),
    Answer("02.per_sample_mse", "ok", '''
        def per_sample_mse(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
            """One MSE per sample: (N, D) x (N, D), or (N,)/(N, 1) in any mix -> (N,)."""
            n = pred.shape[0]
            p, t = pred.view(n, -1) if pred.is_contiguous() else pred.reshape(n, -1), target.reshape(n, -1)
            d = p - t
            return torch.einsum("nd,nd->n", d, d) / d.shape[1]
    ''', label="einsum, divide by D"),
    Answer("02.per_sample_mse", "ok", '''
        def per_sample_mse(pred, target):
            t = target.reshape_as(pred)
            sq = (pred - t) ** 2
            return sq.mean(dim=-1) if sq.dim() == 2 else sq
    ''', label="reshape_as(pred), mean only if 2-D"),
    Answer("02.per_sample_mse", "ok", '''
        def per_sample_mse(pred, target):
            n = pred.shape[0]
            p, t = pred.reshape(n, -1), target.reshape(n, -1)
            return torch.stack([((p[i] - t[i]) ** 2).mean() for i in range(n)])
    ''', label="per-sample loop with stack"),
    Answer("02.per_sample_mse", "ok", '''
        def per_sample_mse(pred, target):
            p = pred.unsqueeze(-1) if pred.dim() == 1 else pred
            t = target.reshape(p.shape)
            return (p - t).square().sum(1) / p.size(1)
    ''', label="square().sum / D"),

    Answer("02.per_sample_mse", "fail", '''
        def per_sample_mse(pred, target):
            return ((pred - target) ** 2).mean(dim=-1)
    ''', label="no reshape: (N, 1) - (N,) broadcasts to (N, N)", words=("(N, N)",)),
    Answer("02.per_sample_mse", "fail", '''
        def per_sample_mse(pred, target):
            p, t = pred.reshape(len(pred), -1), target.reshape(len(target), -1)
            return ((p - t) ** 2).mean(dim=0)
    ''', label="averages over samples (dim 0)", words=('dim=0',)),
    Answer("02.per_sample_mse", "fail", '''
        def per_sample_mse(pred, target):
            p, t = pred.reshape(len(pred), -1), target.reshape(len(target), -1)
            return ((p - t) ** 2).mean()
    ''', label="one scalar for the whole batch", words=("shape",)),
    Answer("02.per_sample_mse", "fail", '''
        def per_sample_mse(pred, target):
            p, t = pred.reshape(len(pred), -1), target.reshape(len(target), -1)
            return ((p - t) ** 2).sum(dim=1)
    ''', label="sum instead of mean over features", words=("sum",)),
    Answer("02.per_sample_mse", "fail", '''
        def per_sample_mse(pred, target):
            p, t = pred.squeeze(), target.squeeze()
            sq = (p - t) ** 2
            return sq if sq.dim() == 1 else sq.mean(dim=1)
    ''', label="squeeze() turns a batch of one into a 0-d scalar", words=("squeeze",)),
    Answer("02.per_sample_mse", "fail", '''
        def per_sample_mse(pred, target):
            p, t = torch.atleast_2d(pred), torch.atleast_2d(target)
            return ((p - t) ** 2).mean(dim=1)
    ''', label="atleast_2d makes (N,) into (1, N)", words=('(N, N)',)),
    Answer("02.per_sample_mse", "fail", '''
        def per_sample_mse(pred, target):
            p, t = pred.reshape(len(pred), -1).float(), target.reshape(len(target), -1).float()
            return ((p - t) ** 2).mean(dim=1)
    ''', label="converts to float32 (float64 in, float32 out)", words=("dtype",)),
    Answer("02.per_sample_mse", "fail", '''
        def per_sample_mse(pred, target):
            p, t = pred.reshape(len(pred), -1), target.reshape(len(target), -1)
            return p.sub_(t).pow_(2).mean(dim=1)
    ''', label="sub_/pow_ overwrite pred through a view", words=("in place",)),
    Answer("02.per_sample_mse", "fail", '''
        def per_sample_mse(pred, target):
            if pred.dim() == 1:
                pred = pred.unsqueeze(1)
            return ((pred - target) ** 2).mean(dim=1)
    ''', label="unsqueezes pred only, not target", words=("(N, N)",)),
    Answer("02.per_sample_mse", "fail", '''
        def per_sample_mse(pred, target):
            p, t = pred.view(-1, 1), target.view(-1, 1)
            return ((p - t) ** 2).mean(dim=1)
    ''', label="view(-1, 1) also flattens (N, D) inputs", words=("shape",)),
    Answer("02.per_sample_mse", "fail", '''
        def per_sample_mse(pred, target):
            p, t = pred.reshape(len(pred), -1), target.reshape(len(target), -1)
            return ((p - t) ** 2).mean(dim=1).sqrt()
    ''', label="RMSE (takes the square root)", words=("sqrt",)),
    Answer("02.per_sample_mse", "fail", '''
        def per_sample_mse(pred, target):
            p, t = pred.reshape(len(pred), -1), target.reshape(len(target), -1)
            return ((p - t) ** 2).mean(dim=1, keepdim=True)
    ''', label="keepdim=True: (N, 1) instead of (N,)", words=("shape",)),
    Answer("02.per_sample_mse", "fail", '''
        def per_sample_mse(pred, target):
            if pred.dim() == 1:
                return (pred - target) ** 2
            return ((pred - target) ** 2).mean(dim=1)
    ''', label="handles only matching shapes, not the (N,)/(N, 1) mix", words=("(N, N)",)),
    Answer("02.per_sample_mse", "fail", '''
        def per_sample_mse(pred, target):
            p, t = pred.reshape(len(pred), -1), target.reshape(len(target), -1)
            return ((p - t) ** 2).sum(dim=1) / len(pred)
    ''', label="divides by N instead of D", words=('wrong values',)),
    Answer("02.per_sample_mse", "fail", '''
        def per_sample_mse(pred, target):
            return ((pred.reshape_as(target) - target) ** 2).mean(dim=-1)
    ''', label="mean(-1) on 1-D inputs averages over the samples", words=("shape",)),
    Answer("02.per_sample_mse", "fail", '''
        def per_sample_mse(pred, target):
            p, t = pred.reshape(len(pred), -1), target.reshape(len(target), -1)
            return (p - t).abs().mean(dim=1)
    ''', label="absolute error instead of squared", words=("squared",)),
    Answer("02.per_sample_mse", "fail", '''
        def per_sample_mse(pred, target):
            n = pred.shape[0]
            p, t = pred.reshape(n, -1), target.reshape(n, -1)
            out = torch.zeros(n)
            for i in range(n):
                out[i] = ((p[i] - t[i]) ** 2).mean()
            return out
    ''', label="loop into torch.zeros(n): always float32", words=("dtype",)),
    Answer("02.per_sample_mse", "fail", '''
        def per_sample_mse(pred, target):
            return F.mse_loss(pred, target, reduction="none").mean(dim=-1)
    ''', label="F.mse_loss(reduction='none') without matching the shapes", words=("(N, N)",)),

    # ------------------------------------------------------------------ 02.center_columns
    Answer("02.center_columns", "ok", '''
        def center_columns(x):
            return x - x.mean(dim=0)
    ''', label="x - x.mean(0)"),
    Answer("02.center_columns", "ok", '''
        def center_columns(x):
            return x - x.mean(dim=0, keepdim=True)
    ''', label="keepdim=True"),
    Answer("02.center_columns", "ok", '''
        def center_columns(x: torch.Tensor) -> torch.Tensor:
            """Subtract each column's mean; x is not modified."""
            col_mean = x.sum(dim=0) / x.shape[0]
            assert col_mean.shape == (x.shape[1],)
            return x - col_mean
    ''', label="sum / N with a shape assertion"),
    Answer("02.center_columns", "ok", '''
        def center_columns(x):
            return torch.stack([x[:, j] - x[:, j].mean() for j in range(x.shape[1])], dim=1)
    ''', label="column loop, stack along dim 1"),
    Answer("02.center_columns", "ok", '''
        def center_columns(x):
            y = x.clone()
            y -= y.mean(0)
            return y
    ''', label="clone then in place on the copy"),
    Answer("02.center_columns", "ok", '''
        def center_columns(x):
            n = x.shape[0]
            h = torch.eye(n, dtype=x.dtype) - torch.full((n, n), 1.0 / n, dtype=x.dtype)
            return h @ x
    ''', label="centring matrix H = I - 1/N"),
    Answer("02.center_columns", "ok", '''
        def center_columns(x):
            return torch.sub(x, torch.mean(x, 0).expand_as(x))
    ''', label="torch.sub with expand_as"),

    Answer("02.center_columns", "fail", '''
        def center_columns(x):
            return x - x.mean(dim=1)
    ''', label="row means without keepdim (silent on square x)", words=('row means',)),
    Answer("02.center_columns", "fail", '''
        def center_columns(x):
            return x - x.mean(dim=1, keepdim=True)
    ''', label="centres the rows", words=("row",)),
    Answer("02.center_columns", "fail", '''
        def center_columns(x):
            return x - x.mean()
    ''', label="global mean", words=('global mean',)),
    Answer("02.center_columns", "fail", '''
        def center_columns(x):
            x -= x.mean(0)
            return x
    ''', label="-= modifies x in place", words=("in place",)),
    Answer("02.center_columns", "fail", '''
        def center_columns(x):
            return x.sub_(x.mean(0))
    ''', label="sub_ in place", words=("in place",)),
    Answer("02.center_columns", "fail", '''
        def center_columns(x):
            return (x - x.mean(0)) / x.std(0)
    ''', label="standardises (divides by std)", words=("std",)),
    Answer("02.center_columns", "fail", '''
        def center_columns(x):
            return (x - x.mean(0)).float()
    ''', label="converts to float32", words=("dtype",)),
    Answer("02.center_columns", "fail", '''
        def center_columns(x):
            return x - x.median(0).values
    ''', label="median instead of mean", words=('wrong values',)),
    Answer("02.center_columns", "fail", '''
        def center_columns(x):
            return x - x.mean(0).unsqueeze(1)
    ''', label="unsqueeze(1) on the column means", words=("shape",)),
    Answer("02.center_columns", "fail", '''
        def center_columns(x):
            return x - x.sum(0) / (x.shape[0] - 1)
    ''', label="divides by N - 1", words=('wrong values',)),
    Answer("02.center_columns", "fail", '''
        def center_columns(x):
            out = x - x.mean(0)
    ''', label="forgets return", words=("return",)),
    Answer("02.center_columns", "fail", '''
        def center_columns(x):
            return x.mean(0)
    ''', label="returns the means", words=("shape",)),
    Answer("02.center_columns", "fail", '''
        def center_columns(x):
            y = x
            y -= x.mean(0)
            return y
    ''', label="y = x is not a copy", words=("in place",)),
    Answer("02.center_columns", "fail", '''
        def center_columns(x):
            y = x.detach()
            y -= y.mean(0)
            return y
    ''', label="detach() shares memory, then in place", words=("in place",)),
    Answer("02.center_columns", "fail", '''
        def center_columns(x):
            return x - x.min(0).values
    ''', label="subtracts the column minimum", words=('wrong values',)),
    Answer("02.center_columns", "fail", '''
        def center_columns(x):
            return x.T - x.mean(0, keepdim=True).T
    ''', label="returns the transposed result", words=('wrong values',)),

    # ------------------------------------------------------------------ 02.pairwise_sq_dists
    Answer("02.pairwise_sq_dists", "ok", '''
        def pairwise_sq_dists(a, b):
            return ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1)
    ''', label="None indexing"),
    Answer("02.pairwise_sq_dists", "ok", '''
        def pairwise_sq_dists(a, b):
            diff = a.unsqueeze(1) - b.unsqueeze(0)
            assert diff.shape == (a.shape[0], b.shape[0], a.shape[1])
            return diff.pow(2).sum(dim=2)
    ''', label="unsqueeze with a shape assertion"),
    Answer("02.pairwise_sq_dists", "ok", '''
        def pairwise_sq_dists(a, b):
            sq = (a * a).sum(1, keepdim=True) + (b * b).sum(1) - 2 * a @ b.T
            return sq.clamp_min(0)
    ''', label="|a|^2 + |b|^2 - 2ab, clamped"),
    Answer("02.pairwise_sq_dists", "ok", '''
        def pairwise_sq_dists(a, b):
            d = a[:, None] - b[None]
            return torch.einsum("nmd,nmd->nm", d, d)
    ''', label="einsum"),
    Answer("02.pairwise_sq_dists", "ok", '''
        def pairwise_sq_dists(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            """Entry [i, j] = ||a[i] - b[j]||^2."""
            return torch.square(a.unsqueeze(-2) - b.unsqueeze(-3)).sum(-1)
    ''', label="torch.square, negative dims"),
    Answer("02.pairwise_sq_dists", "ok", '''
        def pairwise_sq_dists(a, b):
            return torch.vmap(lambda row: ((row - b) ** 2).sum(-1))(a)
    ''', label="torch.vmap over rows"),
    Answer("02.pairwise_sq_dists", "ok", '''
        def pairwise_sq_dists(a, b):
            return (a[None] - b[:, None]).pow(2).sum(-1).T
    ''', label="(M, N) table transposed"),

    Answer("02.pairwise_sq_dists", "fail", '''
        def pairwise_sq_dists(a, b):
            return torch.stack([((row - b) ** 2).sum(1) for row in a])
    ''', label="list comprehension over rows", words=("loop",)),
    Answer("02.pairwise_sq_dists", "fail", '''
        def pairwise_sq_dists(a, b):
            out = torch.empty(a.shape[0], b.shape[0], dtype=a.dtype)
            for i in range(a.shape[0]):
                for j in range(b.shape[0]):
                    out[i, j] = ((a[i] - b[j]) ** 2).sum()
            return out
    ''', label="double Python loop", words=("loop",)),
    Answer("02.pairwise_sq_dists", "fail", '''
        def pairwise_sq_dists(a, b):
            return torch.cdist(a, b) ** 2
    ''', label="torch.cdist", words=("cdist",)),
    Answer("02.pairwise_sq_dists", "fail", '''
        def pairwise_sq_dists(a, b):
            return ((a[:, None] - b[None]) ** 2).sum(-1).sqrt()
    ''', label="distance, not squared", words=("squared",)),
    Answer("02.pairwise_sq_dists", "fail", '''
        def pairwise_sq_dists(a, b):
            return ((a - b) ** 2).sum(-1)
    ''', label="no unsqueeze: row i with row i only", words=("unsqueeze",)),
    Answer("02.pairwise_sq_dists", "fail", '''
        def pairwise_sq_dists(a, b):
            return ((a[:, None] - b[None]) ** 2).sum(1)
    ''', label="sums over the wrong dim", words=("dim",)),
    Answer("02.pairwise_sq_dists", "fail", '''
        def pairwise_sq_dists(a, b):
            return ((b[:, None] - a[None]) ** 2).sum(-1)
    ''', label="(M, N) instead of (N, M)", words=("shape",)),
    Answer("02.pairwise_sq_dists", "fail", '''
        def pairwise_sq_dists(a, b):
            return a @ b.T
    ''', label="dot products", words=('wrong values',)),
    Answer("02.pairwise_sq_dists", "fail", '''
        def pairwise_sq_dists(a, b):
            return (a * a).sum(1, keepdim=True) + (b * b).sum(1) + 2 * a @ b.T
    ''', label="expansion with + 2ab", words=('wrong values',)),
    Answer("02.pairwise_sq_dists", "fail", '''
        def pairwise_sq_dists(a, b):
            return (a * a).sum(1) + (b * b).sum(1) - 2 * a @ b.T
    ''', label="expansion without keepdim", words=('keepdim',)),
    Answer("02.pairwise_sq_dists", "fail", '''
        def pairwise_sq_dists(a, b):
            return ((a[:, None] - b[None]) ** 2).sum(-1).float()
    ''', label="converts to float32", words=("dtype",)),
    Answer("02.pairwise_sq_dists", "fail", '''
        def pairwise_sq_dists(a, b):
            return (a[:, None] - b[None]).abs().sum(-1)
    ''', label="L1 distance", words=('wrong values',)),
    Answer("02.pairwise_sq_dists", "fail", '''
        def pairwise_sq_dists(a, b):
            return ((a[:, None] - b[None]) ** 2).mean(-1)
    ''', label="mean over D instead of sum", words=('wrong values',)),
    Answer("02.pairwise_sq_dists", "fail", '''
        def pairwise_sq_dists(a, b):
            return torch.stack(list(map(lambda row: ((row - b) ** 2).sum(1), a)))
    ''', label="map over rows (a Python loop in disguise)", words=("loop",)),
    Answer("02.pairwise_sq_dists", "fail", '''
        def pairwise_sq_dists(a, b):
            rows = []
            i = 0
            while i < len(a):
                rows.append(((a[i] - b) ** 2).sum(1))
                i += 1
            return torch.stack(rows)
    ''', label="while loop", words=("loop",)),
    Answer("02.pairwise_sq_dists", "fail", '''
        def pairwise_sq_dists(a, b):
            a.unsqueeze_(1)
            return ((a - b) ** 2).sum(-1)
    ''', label="unsqueeze_ changes a's shape in place", words=("in place",)),
    Answer("02.pairwise_sq_dists", "fail", '''
        def pairwise_sq_dists(a, b):
            return ((a[:, None] - b[None]) ** 2).sum(-1, keepdim=True)
    ''', label="keepdim: (N, M, 1)", words=("shape",)),
    Answer("02.pairwise_sq_dists", "fail", '''
        def pairwise_sq_dists(a, b):
            return ((a[:, None] - b[None]) ** 2).sum(-1).squeeze()
    ''', label="squeeze() breaks N = 1 or M = 1", words=('squeeze()',)),
]
