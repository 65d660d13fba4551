"""Blind answers for notebook 05, written from notebooks/05_data_pipeline.ipynb only."""
from tests.blind import Answer

ANSWERS = [
    # ------------------------------------------------------------------ 05.normalization_stats
    Answer("05.normalization_stats", "ok", '''
        def normalization_stats(images):
            return images.mean(dim=(0, 2, 3)), images.std(dim=(0, 2, 3))
    ''', label="mean/std over dims (0, 2, 3)"),
    Answer("05.normalization_stats", "ok", '''
        def normalization_stats(images):
            per_channel = images.transpose(0, 1).flatten(start_dim=1)
            return per_channel.mean(dim=1), per_channel.std(dim=1)
    ''', label="transpose + flatten as in the lesson"),
    Answer("05.normalization_stats", "ok", '''
        def normalization_stats(images):
            std, mean = torch.std_mean(images, dim=(0, 2, 3))
            return mean, std
    ''', label="torch.std_mean"),
    Answer("05.normalization_stats", "ok", '''
        def normalization_stats(images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            """Per-channel mean and std of a [N, C, H, W] float tensor."""
            if images.ndim != 4:
                raise ValueError(f"expected [N, C, H, W], got shape {tuple(images.shape)}")
            means, stds = [], []
            for c in range(images.shape[1]):
                channel = images[:, c]
                means.append(channel.mean())
                stds.append(channel.std())
            return torch.stack(means), torch.stack(stds)
    ''', label="loop over channels with validation"),
    Answer("05.normalization_stats", "ok", '''
        def normalization_stats(images):
            x = images.double()
            mean = x.mean(dim=(0, 2, 3))
            std = x.std(dim=(0, 2, 3))
            return mean.to(images.dtype), std.to(images.dtype)
    ''', label="computed in float64, cast back to the input dtype"),
    Answer("05.normalization_stats", "ok", '''
        def normalization_stats(images):
            c = images.size(1)
            flat = images.permute(1, 0, 2, 3).reshape(c, -1)
            n = flat.shape[1]
            mean = flat.sum(dim=1) / n
            var = ((flat - mean[:, None]) ** 2).sum(dim=1) / (n - 1)
            return mean, var.sqrt()
    ''', label="by hand: permute, reshape, unbiased variance"),
    Answer("05.normalization_stats", "ok", '''
        def normalization_stats(images):
            return images.mean(dim=(0, 2, 3)), images.std(dim=(0, 2, 3), correction=0)
    ''', label="population std (correction=0): the task does not say which std"),
    Answer("05.normalization_stats", "fail", '''
        def normalization_stats(images):
            return images.mean(dim=0), images.std(dim=0)
    ''', label="reduces over the batch only: [C, H, W]", words=("shape",)),
    Answer("05.normalization_stats", "fail", '''
        def normalization_stats(images):
            return images.mean(dim=(1, 2, 3)), images.std(dim=(1, 2, 3))
    ''', label="per image instead of per channel: [N]", words=("shape",)),
    Answer("05.normalization_stats", "fail", '''
        def normalization_stats(images):
            return images.mean(dim=(2, 3)).mean(dim=0), images.std(dim=(2, 3)).mean(dim=0)
    ''', label="std = mean of per-image stds", words=('per-image', )),
    Answer("05.normalization_stats", "fail", '''
        def normalization_stats(images):
            c = images.shape[1]
            flat = images.reshape(c, -1)
            return flat.mean(dim=1), flat.std(dim=1)
    ''', label="reshape(C, -1) without moving channels first (right only for N=1)", words=('reshape(C, -1)', )),
    Answer("05.normalization_stats", "fail", '''
        def normalization_stats(images):
            return images.mean(), images.std()
    ''', label="one scalar over all channels", words=("shape",)),
    Answer("05.normalization_stats", "fail", '''
        def normalization_stats(images):
            return images.mean(dim=(0, 2, 3), keepdim=True), images.std(dim=(0, 2, 3), keepdim=True)
    ''', label="keepdim=True: shape [1, C, 1, 1]", words=("shape",)),
    Answer("05.normalization_stats", "fail", '''
        def normalization_stats(images):
            return images.std(dim=(0, 2, 3)), images.mean(dim=(0, 2, 3))
    ''', label="returns (std, mean)", words=('wrong order', )),
    Answer("05.normalization_stats", "fail", '''
        def normalization_stats(images):
            return images.mean(dim=(0, 2, 3)), images.var(dim=(0, 2, 3))
    ''', label="variance instead of std", words=("variance",)),
    Answer("05.normalization_stats", "fail", '''
        def normalization_stats(images):
            return images.mean(dim=(0, 2, 3)).tolist(), images.std(dim=(0, 2, 3)).tolist()
    ''', label="returns Python lists", words=('tensor', )),
    Answer("05.normalization_stats", "fail", '''
        def normalization_stats(images):
            x = images.double()
            return x.mean(dim=(0, 2, 3)), x.std(dim=(0, 2, 3))
    ''', label="returns float64 for a float32 input", words=("dtype",)),
    Answer("05.normalization_stats", "fail", '''
        def normalization_stats(images):
            x = images.float()
            return x.mean(dim=(0, 2, 3)), x.std(dim=(0, 2, 3))
    ''', label="casts to float32 (wrong dtype for float64/float16 input)", words=("dtype",)),
    Answer("05.normalization_stats", "fail", '''
        def normalization_stats(images):
            means = torch.stack([images[:, c].mean() for c in range(3)])
            stds = torch.stack([images[:, c].std() for c in range(3)])
            return means, stds
    ''', label="hard-codes 3 channels", words=('range(3)', )),
    Answer("05.normalization_stats", "fail", '''
        def normalization_stats(images):
            mean = images.mean(dim=(0, 2, 3))
            std = images.std(dim=(0, 2, 3))
            images.sub_(mean[None, :, None, None]).div_(std[None, :, None, None])
            return mean, std
    ''', label="normalises the input in place", words=('in place', )),
    Answer("05.normalization_stats", "fail", '''
        def normalization_stats(images):
            return images[0].mean(dim=(1, 2)), images[0].std(dim=(1, 2))
    ''', label="statistics of the first image only", words=('first image', )),
    Answer("05.normalization_stats", "fail", '''
        def normalization_stats(images):
            return images.mean(dim=(0, 2, 3)), images.std(dim=(0, 2, 3)) ** 0.5
    ''', label="square root of the std", words=('sqrt', )),
    Answer("05.normalization_stats", "fail", '''
        def normalization_stats(images):
            return images.mean(dim=(0, 1, 2)), images.std(dim=(0, 1, 2))
    ''', label="channels-last reduction on a channels-first tensor", words=("shape",)),
    Answer("05.normalization_stats", "fail", '''
        def normalization_stats(images):
            x = images / 255
            return x.mean(dim=(0, 2, 3)), x.std(dim=(0, 2, 3))
    ''', label="divides by 255 again", words=('255', )),
    # ------------------------------------------------------------------ 05.make_loaders
    Answer("05.make_loaders", "ok", '''
        def make_loaders(train_ds, val_ds, batch_size):
            train_loader = DataLoader(train_ds, batch_size=batch_size, shuffle=True, drop_last=True)
            val_loader = DataLoader(val_ds, batch_size=batch_size, shuffle=False)
            return train_loader, val_loader
    ''', label="keywords"),
    Answer("05.make_loaders", "ok", '''
        def make_loaders(train_ds, val_ds, batch_size):
            return (DataLoader(train_ds, batch_size, True, drop_last=True),
                    DataLoader(val_ds, batch_size))
    ''', label="positional shuffle, defaults for val"),
    Answer("05.make_loaders", "ok", '''
        from torch.utils.data import RandomSampler

        def make_loaders(train_ds, val_ds, batch_size):
            train = DataLoader(train_ds, batch_size=batch_size, sampler=RandomSampler(train_ds), drop_last=True)
            val = DataLoader(val_ds, batch_size=batch_size, shuffle=False, drop_last=False)
            return train, val
    ''', label="RandomSampler for training"),
    Answer("05.make_loaders", "ok", '''
        from torch.utils.data import BatchSampler, RandomSampler, SequentialSampler

        def make_loaders(train_ds, val_ds, batch_size: int):
            """Training: shuffled, no short last batch. Validation: in order, every sample."""
            train_batches = BatchSampler(RandomSampler(train_ds), batch_size=batch_size, drop_last=True)
            val_batches = BatchSampler(SequentialSampler(val_ds), batch_size=batch_size, drop_last=False)
            return DataLoader(train_ds, batch_sampler=train_batches), DataLoader(val_ds, batch_sampler=val_batches)
    ''', label="explicit BatchSamplers"),
    Answer("05.make_loaders", "ok", '''
        def make_loaders(train_ds, val_ds, batch_size):
            if batch_size < 1:
                raise ValueError(f"batch_size must be >= 1, got {batch_size}")
            common = dict(batch_size=batch_size, num_workers=0)
            return (DataLoader(train_ds, shuffle=True, drop_last=True, **common),
                    DataLoader(val_ds, shuffle=False, drop_last=False, **common))
    ''', label="shared kwargs dict, validation of batch_size"),
    Answer("05.make_loaders", "ok", '''
        def make_loaders(train_ds, val_ds, batch_size):
            g = torch.Generator()
            g.manual_seed(0)
            train_loader = DataLoader(train_ds, batch_size=batch_size, shuffle=True, drop_last=True, generator=g)
            val_loader = DataLoader(val_ds, batch_size=batch_size)
            return train_loader, val_loader
    ''', label="own generator for the shuffle"),
    Answer("05.make_loaders", "ok", '''
        def make_loaders(train_ds, val_ds, batch_size):
            train_loader = DataLoader(train_ds, batch_size=batch_size, shuffle=True, drop_last=True)
            val_loader = DataLoader(val_ds, batch_size=2 * batch_size, shuffle=False)
            return train_loader, val_loader
    ''', label="larger validation batches (the text does not fix the val batch size)"),
    Answer("05.make_loaders", "fail", '''
        def make_loaders(train_ds, val_ds, batch_size):
            return (DataLoader(train_ds, batch_size=batch_size, drop_last=True),
                    DataLoader(val_ds, batch_size=batch_size))
    ''', label="training loader not shuffled", words=("shuffle",)),
    Answer("05.make_loaders", "fail", '''
        def make_loaders(train_ds, val_ds, batch_size):
            return (DataLoader(train_ds, batch_size=batch_size, shuffle=True),
                    DataLoader(val_ds, batch_size=batch_size))
    ''', label="training loader keeps the last batch", words=("drop_last",)),
    Answer("05.make_loaders", "fail", '''
        def make_loaders(train_ds, val_ds, batch_size):
            return (DataLoader(train_ds, batch_size=batch_size, shuffle=True, drop_last=True),
                    DataLoader(val_ds, batch_size=batch_size, shuffle=True))
    ''', label="validation loader shuffled", words=("shuffle",)),
    Answer("05.make_loaders", "fail", '''
        def make_loaders(train_ds, val_ds, batch_size):
            return (DataLoader(train_ds, batch_size=batch_size, shuffle=True, drop_last=True),
                    DataLoader(val_ds, batch_size=batch_size, drop_last=True))
    ''', label="validation loader drops the last batch", words=("drop_last",)),
    Answer("05.make_loaders", "fail", '''
        def make_loaders(train_ds, val_ds, batch_size):
            kw = dict(batch_size=batch_size, shuffle=True, drop_last=True)
            return DataLoader(train_ds, **kw), DataLoader(val_ds, **kw)
    ''', label="same settings for both loaders", words=('validation loader shuffles', )),
    Answer("05.make_loaders", "fail", '''
        def make_loaders(train_ds, val_ds, batch_size):
            return (DataLoader(val_ds, batch_size=batch_size, shuffle=False),
                    DataLoader(train_ds, batch_size=batch_size, shuffle=True, drop_last=True))
    ''', label="returns (val_loader, train_loader)", words=('order', )),
    Answer("05.make_loaders", "fail", '''
        def make_loaders(train_ds, val_ds, batch_size):
            return (DataLoader(train_ds, batch_size=64, shuffle=True, drop_last=True),
                    DataLoader(val_ds, batch_size=64))
    ''', label="hard-coded batch size 64", words=('batch_size 8', )),
    Answer("05.make_loaders", "fail", '''
        def make_loaders(train_ds, val_ds, batch_size):
            return (DataLoader(train_ds, shuffle=True, drop_last=True),
                    DataLoader(val_ds, batch_size=batch_size))
    ''', label="forgets batch_size on the training loader", words=('batch_size 8', )),
    Answer("05.make_loaders", "fail", '''
        def make_loaders(train_ds, val_ds, batch_size):
            return (DataLoader(val_ds, batch_size=batch_size, shuffle=True, drop_last=True),
                    DataLoader(val_ds, batch_size=batch_size))
    ''', label="copy-paste: trains on val_ds", words=("train_ds",)),
    Answer("05.make_loaders", "fail", '''
        def make_loaders(train_ds, val_ds, batch_size):
            return (DataLoader(train_ds, batch_size=batch_size, shuffle=True, drop_last=True),
                    DataLoader(train_ds, batch_size=batch_size))
    ''', label="copy-paste: validates on train_ds", words=("val_ds",)),
    Answer("05.make_loaders", "fail", '''
        from torch.utils.data import RandomSampler

        def make_loaders(train_ds, val_ds, batch_size):
            return (DataLoader(train_ds, batch_size=batch_size, shuffle=True, drop_last=True),
                    DataLoader(val_ds, batch_size=batch_size, sampler=RandomSampler(val_ds)))
    ''', label="RandomSampler on validation", words=('validation loader shuffles', )),
    Answer("05.make_loaders", "fail", '''
        from torch.utils.data import Subset

        def make_loaders(train_ds, val_ds, batch_size):
            keep = len(train_ds) // batch_size * batch_size
            train = DataLoader(Subset(train_ds, range(keep)), batch_size=batch_size, shuffle=True)
            return train, DataLoader(val_ds, batch_size=batch_size)
    ''', label="truncates the dataset once (always drops the same samples)", words=("drop_last",)),
    Answer("05.make_loaders", "fail", '''
        def make_loaders(train_ds, val_ds, batch_size):
            return DataLoader(train_ds, batch_size=batch_size, shuffle=True, drop_last=True)
    ''', label="returns only the training loader", words=('tuple', )),
    Answer("05.make_loaders", "fail", '''
        def make_loaders(train_ds, val_ds, batch_size):
            return (DataLoader(train_ds, batch_size=batch_size, shuffle=True, drop_last=len(train_ds) > 1000),
                    DataLoader(val_ds, batch_size=batch_size))
    ''', label="drop_last only for big datasets", words=("drop_last",)),
    Answer("05.make_loaders", "fail", '''
        from torch.utils.data import SubsetRandomSampler

        def make_loaders(train_ds, val_ds, batch_size):
            half = SubsetRandomSampler(range(len(train_ds) // 2))
            return (DataLoader(train_ds, batch_size=batch_size, sampler=half, drop_last=True),
                    DataLoader(val_ds, batch_size=batch_size))
    ''', label="samples only half of the training set", words=('training samples', )),
    # ------------------------------------------------------------------ 05.pad_collate
    Answer("05.pad_collate", "ok", '''
        def pad_collate(batch):
            tokens, labels = zip(*batch)
            padded = pad_sequence(list(tokens), batch_first=True, padding_value=0)
            lengths = torch.tensor([len(t) for t in tokens], dtype=torch.long)
            return padded, lengths, torch.tensor(labels, dtype=torch.long)
    ''', label="pad_sequence, zip"),
    Answer("05.pad_collate", "ok", '''
        def pad_collate(batch):
            lengths = torch.tensor([t.numel() for t, _ in batch])
            padded = torch.zeros(len(batch), int(lengths.max()), dtype=torch.long)
            for i, (t, _) in enumerate(batch):
                padded[i, :len(t)] = t
            labels = torch.tensor([label for _, label in batch])
            return padded, lengths, labels
    ''', label="manual zeros + slice assignment"),
    Answer("05.pad_collate", "ok", '''
        def pad_collate(batch):
            t_max = max(len(t) for t, _ in batch)
            rows = [F.pad(t, (0, t_max - len(t)), value=0) for t, _ in batch]
            return (torch.stack(rows), torch.tensor([len(t) for t, _ in batch], dtype=torch.int64),
                    torch.tensor([int(y) for _, y in batch], dtype=torch.int64))
    ''', label="F.pad each row, stack"),
    Answer("05.pad_collate", "ok", '''
        def pad_collate(batch: list[tuple[torch.Tensor, int]]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
            """Pad a batch of variable-length token sequences to the batch's longest."""
            if not batch:
                raise ValueError("empty batch")
            seqs = [torch.as_tensor(tokens, dtype=torch.long) for tokens, _ in batch]
            lengths = torch.as_tensor([s.shape[0] for s in seqs], dtype=torch.long)
            padded = torch.full((len(seqs), int(lengths.max())), 0, dtype=torch.long)
            for row, s in zip(padded, seqs):
                row[: s.shape[0]].copy_(s)
            labels = torch.as_tensor([label for _, label in batch], dtype=torch.long)
            return padded, lengths, labels
    ''', label="torch.full, copy_, type hints and validation"),
    Answer("05.pad_collate", "ok", '''
        def _lengths(seqs):
            return torch.LongTensor([len(s) for s in seqs])

        def pad_collate(batch):
            seqs = [s for s, _ in batch]
            padded = torch.nn.utils.rnn.pad_sequence(seqs, batch_first=True)
            return padded, _lengths(seqs), torch.LongTensor([y for _, y in batch])
    ''', label="helper, LongTensor constructors, default padding value", name="pad_collate"),
    Answer("05.pad_collate", "ok", '''
        def pad_collate(batch):
            padded = pad_sequence([t for t, _ in batch], padding_value=0).T.contiguous()
            lengths = torch.tensor(list(map(len, (t for t, _ in batch))))
            labels = torch.tensor([y for _, y in batch]).long()
            return padded, lengths, labels
    ''', label="time-first pad_sequence transposed"),
    Answer("05.pad_collate", "fail", '''
        def pad_collate(batch):
            tokens, labels = zip(*batch)
            padded = pad_sequence(list(tokens), padding_value=0)
            return padded, torch.tensor([len(t) for t in tokens]), torch.tensor(labels)
    ''', label="forgets batch_first: [T_max, B]", words=("batch_first",)),
    Answer("05.pad_collate", "fail", '''
        def pad_collate(batch):
            tokens, labels = zip(*batch)
            padded = pad_sequence(list(tokens), batch_first=True, padding_value=-1)
            return padded, torch.tensor([len(t) for t in tokens]), torch.tensor(labels)
    ''', label="pads with -1", words=("0",)),
    Answer("05.pad_collate", "fail", '''
        def pad_collate(batch):
            tokens, labels = zip(*batch)
            padded = torch.zeros(len(batch), 50, dtype=torch.long)
            for i, t in enumerate(tokens):
                padded[i, :len(t)] = t
            return padded, torch.tensor([len(t) for t in tokens]), torch.tensor(labels)
    ''', label="pads to a fixed length 50", words=("longest",)),
    Answer("05.pad_collate", "fail", '''
        def pad_collate(batch):
            tokens, labels = zip(*batch)
            padded = pad_sequence(list(tokens), batch_first=True)
            return padded, [len(t) for t in tokens], torch.tensor(labels)
    ''', label="lengths as a Python list", words=('tensor', )),
    Answer("05.pad_collate", "fail", '''
        def pad_collate(batch):
            tokens, labels = zip(*batch)
            padded = pad_sequence(list(tokens), batch_first=True)
            return padded, torch.tensor([len(t) for t in tokens]), list(labels)
    ''', label="labels as a Python list", words=('tensor', )),
    Answer("05.pad_collate", "fail", '''
        def pad_collate(batch):
            tokens, labels = zip(*batch)
            padded = pad_sequence(list(tokens), batch_first=True)
            lengths = torch.tensor([len(row) for row in padded])
            return padded, lengths, torch.tensor(labels)
    ''', label="lengths measured after padding", words=('after padding', )),
    Answer("05.pad_collate", "fail", '''
        def pad_collate(batch):
            tokens, labels = zip(*batch)
            padded = pad_sequence(list(tokens), batch_first=True)
            return padded, torch.tensor([len(t) for t in tokens]), torch.tensor(labels, dtype=torch.int32)
    ''', label="labels int32", words=("int64",)),
    Answer("05.pad_collate", "fail", '''
        def pad_collate(batch):
            tokens, labels = zip(*batch)
            padded = pad_sequence(list(tokens), batch_first=True)
            return padded, torch.tensor([len(t) for t in tokens], dtype=torch.float32), torch.tensor(labels)
    ''', label="lengths float32", words=("lengths",)),
    Answer("05.pad_collate", "fail", '''
        def pad_collate(batch):
            batch = sorted(batch, key=lambda pair: len(pair[0]), reverse=True)
            tokens, labels = zip(*batch)
            padded = pad_sequence(list(tokens), batch_first=True)
            return padded, torch.tensor([len(t) for t in tokens]), torch.tensor(labels)
    ''', label="sorts the batch by length (changes the sample order)", words=('order', )),
    Answer("05.pad_collate", "fail", '''
        def pad_collate(batch):
            batch.sort(key=lambda pair: len(pair[0]), reverse=True)
            tokens, labels = zip(*batch)
            padded = pad_sequence(list(tokens), batch_first=True)
            return padded, torch.tensor([len(t) for t in tokens]), torch.tensor(labels)
    ''', label="sorts the input list in place", words=('in place', )),
    Answer("05.pad_collate", "fail", '''
        def pad_collate(batch):
            tokens, labels = zip(*batch)
            padded = pad_sequence(list(tokens), batch_first=True, padding_side="left")
            return padded, torch.tensor([len(t) for t in tokens]), torch.tensor(labels)
    ''', label="pads on the left", words=("left",)),
    Answer("05.pad_collate", "fail", '''
        def pad_collate(batch):
            tokens, labels = zip(*batch)
            t_max = max(len(t) for t in tokens)
            padded = torch.zeros(len(batch), t_max)
            for i, t in enumerate(tokens):
                padded[i, :len(t)] = t
            return padded, torch.tensor([len(t) for t in tokens]), torch.tensor(labels)
    ''', label="padded tensor is float32 (torch.zeros default)", words=("dtype",)),
    Answer("05.pad_collate", "fail", '''
        def pad_collate(batch):
            tokens, labels = zip(*batch)
            padded = pad_sequence(list(tokens), batch_first=True)
            return padded, torch.tensor(labels), torch.tensor([len(t) for t in tokens])
    ''', label="returns (padded, labels, lengths)", words=('wrong order', )),
    Answer("05.pad_collate", "fail", '''
        def pad_collate(batch):
            tokens, labels = zip(*batch)
            t_max = len(tokens[0])
            padded = torch.zeros(len(batch), t_max, dtype=torch.long)
            for i, t in enumerate(tokens):
                padded[i, :len(t)] = t[:t_max]
            return padded, torch.tensor([len(t) for t in tokens]), torch.tensor(labels)
    ''', label="T_max from the first sequence (truncates longer ones)", words=("longest",)),
    Answer("05.pad_collate", "fail", '''
        def pad_collate(batch):
            tokens, labels = zip(*batch)
            t_max = max(len(t) for t in tokens) + 1
            padded = torch.zeros(len(batch), t_max, dtype=torch.long)
            for i, t in enumerate(tokens):
                padded[i, :len(t)] = t
            return padded, torch.tensor([len(t) for t in tokens]), torch.tensor(labels)
    ''', label="one column too many", words=('one column', )),
    Answer("05.pad_collate", "fail", '''
        def pad_collate(batch):
            tokens, labels = zip(*batch)
            padded = pad_sequence(list(tokens), batch_first=True).squeeze()
            return padded, torch.tensor([len(t) for t in tokens]).squeeze(), torch.tensor(labels).squeeze()
    ''', label="squeeze() breaks a batch of one", words=('(1, 6)', )),
    Answer("05.pad_collate", "fail", '''
        def pad_collate(batch):
            tokens, labels = zip(*batch)
            padded = torch.stack(tokens)
            return padded, torch.tensor([len(t) for t in tokens]), torch.tensor(labels)
    ''', label="torch.stack without padding", words=("pad",)),
    Answer("05.pad_collate", "fail", '''
        def pad_collate(batch):
            tokens, labels = zip(*batch)
            padded = pad_sequence(list(tokens), batch_first=True)
            return padded, torch.tensor([len(t) for t in tokens]), torch.stack([torch.tensor(l) for l in labels]).float()
    ''', label="float labels", words=('int64', )),
]
