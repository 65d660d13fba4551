"""Blind answers for notebook 06, written from notebooks/06_training_loop.ipynb only."""
from tests.blind import Answer

ANSWERS = [
    # ------------------------------------------------------------------ 06.train_one_epoch
    Answer("06.train_one_epoch", "ok", '''
        def train_one_epoch(model, loader, loss_fn, optimizer, device):
            model.train()
            total, count = torch.zeros((), device=device), 0
            for x, y in loader:
                x, y = x.to(device), y.to(device)
                optimizer.zero_grad()
                loss = loss_fn(model(x), y)
                loss.backward()
                optimizer.step()
                total += loss.detach() * len(y)
                count += len(y)
            return total.item() / count
    ''', label="tensor running sum, detach, one .item() at the end"),
    Answer("06.train_one_epoch", "ok", '''
        def train_one_epoch(model, loader, loss_fn, optimizer, device):
            model.train()
            total, count = 0.0, 0
            for x, y in loader:
                x = x.to(device)
                y = y.to(device)
                optimizer.zero_grad()
                out = model(x)
                loss = loss_fn(out, y)
                loss.backward()
                optimizer.step()
                total += loss.item() * x.size(0)
                count += x.size(0)
            return total / count
    ''', label=".item() per batch, x.size(0) weights"),
    Answer("06.train_one_epoch", "ok", '''
        def train_one_epoch(model: nn.Module, loader, loss_fn, optimizer, device) -> float:
            """Train one epoch; return the sample-weighted mean loss."""
            model.train(True)
            losses, sizes = [], []
            for batch in loader:
                x, y = (t.to(device) for t in batch)
                model.zero_grad(set_to_none=True)
                loss = loss_fn(model(x), y)
                loss.backward()
                optimizer.step()
                losses.append(loss.detach())
                sizes.append(y.shape[0])
            weights = torch.tensor(sizes, dtype=torch.float32, device=device)
            return float((torch.stack(losses) * weights).sum() / weights.sum())
    ''', label="model.zero_grad, stacked losses weighted at the end"),
    Answer("06.train_one_epoch", "ok", '''
        def train_one_epoch(model, loader, loss_fn, optimizer, device):
            model.train()
            seen = 0
            running = 0.0
            for i, (inputs, targets) in enumerate(loader):
                inputs, targets = inputs.to(device, non_blocking=True), targets.to(device, non_blocking=True)
                optimizer.zero_grad(set_to_none=False)
                logits = model(inputs)
                loss = loss_fn(logits, targets)
                loss.backward()
                optimizer.step()
                n = targets.numel()
                running += float(loss) * n
                seen += n
            return running / seen
    ''', label="zero_grad(set_to_none=False), enumerate, float(loss)"),
    Answer("06.train_one_epoch", "ok", '''
        def _one_step(model, x, y, loss_fn, optimizer):
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            return loss.detach()

        def train_one_epoch(model, loader, loss_fn, optimizer, device):
            model.train()
            weighted = []
            n = 0
            for x, y in loader:
                x, y = x.to(device), y.to(device)
                weighted.append(_one_step(model, x, y, loss_fn, optimizer) * len(x))
                n += len(x)
            return torch.stack(weighted).sum().item() / n
    ''', label="helper function for the step", name="train_one_epoch"),
    Answer("06.train_one_epoch", "ok", '''
        def train_one_epoch(model, loader, loss_fn, optimizer, device):
            if not model.training:
                model.train()
            sum_loss = None
            n_samples = 0
            for x, y in loader:
                x, y = x.to(device), y.to(device)
                for p in model.parameters():
                    p.grad = None
                loss = loss_fn(model(x), y)
                loss.backward()
                optimizer.step()
                contribution = loss.detach() * y.shape[0]
                sum_loss = contribution if sum_loss is None else sum_loss + contribution
                n_samples += y.shape[0]
            return (sum_loss / n_samples).item()
    ''', label="clears p.grad by hand, train() only if needed"),
    Answer("06.train_one_epoch", "fail", '''
        def train_one_epoch(model, loader, loss_fn, optimizer, device):
            total, count = 0.0, 0
            for x, y in loader:
                x, y = x.to(device), y.to(device)
                optimizer.zero_grad()
                loss = loss_fn(model(x), y)
                loss.backward()
                optimizer.step()
                total += loss.item() * len(y)
                count += len(y)
            return total / count
    ''', label="never calls model.train()", words=('model.train()', )),
    Answer("06.train_one_epoch", "fail", '''
        def train_one_epoch(model, loader, loss_fn, optimizer, device):
            model.train
            total, count = 0.0, 0
            for x, y in loader:
                x, y = x.to(device), y.to(device)
                optimizer.zero_grad()
                loss = loss_fn(model(x), y)
                loss.backward()
                optimizer.step()
                total += loss.item() * len(y)
                count += len(y)
            return total / count
    ''', label="model.train without parentheses", words=('model.train()', )),
    Answer("06.train_one_epoch", "fail", '''
        def train_one_epoch(model, loader, loss_fn, optimizer, device):
            model.train()
            total, count = 0.0, 0
            for x, y in loader:
                x, y = x.to(device), y.to(device)
                loss = loss_fn(model(x), y)
                loss.backward()
                optimizer.step()
                total += loss.item() * len(y)
                count += len(y)
            return total / count
    ''', label="no zero_grad at all", words=("zero_grad",)),
    Answer("06.train_one_epoch", "fail", '''
        def train_one_epoch(model, loader, loss_fn, optimizer, device):
            model.train()
            total, count = 0.0, 0
            for x, y in loader:
                x, y = x.to(device), y.to(device)
                loss = loss_fn(model(x), y)
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
                total += loss.item() * len(y)
                count += len(y)
            return total / count
    ''', label="zero_grad after step: first step uses the stale gradients held on entry", words=("zero_grad",)),
    Answer("06.train_one_epoch", "fail", '''
        def train_one_epoch(model, loader, loss_fn, optimizer, device):
            model.train()
            total, count = 0.0, 0
            for x, y in loader:
                x, y = x.to(device), y.to(device)
                loss = loss_fn(model(x), y)
                loss.backward()
                optimizer.zero_grad()
                optimizer.step()
                total += loss.item() * len(y)
                count += len(y)
            return total / count
    ''', label="zero_grad between backward and step (no update)", words=("zero_grad",)),
    Answer("06.train_one_epoch", "fail", '''
        def train_one_epoch(model, loader, loss_fn, optimizer, device):
            model.train()
            losses = []
            for x, y in loader:
                x, y = x.to(device), y.to(device)
                optimizer.zero_grad()
                loss = loss_fn(model(x), y)
                loss.backward()
                optimizer.step()
                losses.append(loss.item())
            return sum(losses) / len(losses)
    ''', label="unweighted mean of batch means", words=('unweighted', )),
    Answer("06.train_one_epoch", "fail", '''
        def train_one_epoch(model, loader, loss_fn, optimizer, device):
            model.train()
            total = 0.0
            for x, y in loader:
                x, y = x.to(device), y.to(device)
                optimizer.zero_grad()
                loss = loss_fn(model(x), y)
                loss.backward()
                optimizer.step()
                total += loss.item() * loader.batch_size
            return total / (len(loader) * loader.batch_size)
    ''', label="weights every batch by loader.batch_size (last batch shorter)", words=("last batch",)),
    Answer("06.train_one_epoch", "fail", '''
        def train_one_epoch(model, loader, loss_fn, optimizer, device):
            model.train()
            total = torch.zeros(())
            count = 0
            for x, y in loader:
                x, y = x.to(device), y.to(device)
                optimizer.zero_grad()
                loss = loss_fn(model(x), y)
                loss.backward()
                optimizer.step()
                total += loss.detach() * len(y)
                count += len(y)
            return total / count
    ''', label="returns a tensor, not a Python float", words=("float",)),
    Answer("06.train_one_epoch", "fail", '''
        def train_one_epoch(model, loader, loss_fn, optimizer, device):
            model.train()
            total = 0.0
            for x, y in loader:
                x, y = x.to(device), y.to(device)
                optimizer.zero_grad()
                loss = loss_fn(model(x), y)
                loss.backward()
                optimizer.step()
                total += loss.item() * len(y)
            return total
    ''', label="returns the sum, not the mean", words=('sum', )),
    Answer("06.train_one_epoch", "fail", '''
        def train_one_epoch(model, loader, loss_fn, optimizer, device):
            model.train()
            for x, y in loader:
                x, y = x.to(device), y.to(device)
                optimizer.zero_grad()
                loss = loss_fn(model(x), y)
                loss.backward()
                optimizer.step()
            return loss.item()
    ''', label="returns the last batch's loss", words=('last batch', )),
    Answer("06.train_one_epoch", "fail", '''
        def train_one_epoch(model, loader, loss_fn, optimizer, device):
            model.train()
            total, count = 0.0, 0
            for x, y in loader:
                x, y = x.to(device), y.to(device)
                optimizer.zero_grad()
                loss = loss_fn(model(x), y)
                loss.backward()
                total += loss.item() * len(y)
                count += len(y)
            return total / count
    ''', label="forgets optimizer.step()", words=('optimizer.step()', )),
    Answer("06.train_one_epoch", "fail", '''
        def train_one_epoch(model, loader, loss_fn, optimizer, device):
            model.train()
            total, count = 0.0, 0
            optimizer.zero_grad()
            for x, y in loader:
                x, y = x.to(device), y.to(device)
                loss = loss_fn(model(x), y)
                loss.backward()
                total += loss.item() * len(y)
                count += len(y)
            optimizer.step()
            return total / count
    ''', label="one optimizer step per epoch (accumulates over the epoch)", words=('zero_grad', )),
    Answer("06.train_one_epoch", "fail", '''
        def train_one_epoch(model, loader, loss_fn, optimizer, device):
            model.train()
            total, count = 0.0, 0
            for x, y in loader:
                x, y = x.to(device), y.to(device)
                optimizer.zero_grad()
                loss = loss_fn(model(x), y)
                optimizer.step()
                loss.backward()
                total += loss.item() * len(y)
                count += len(y)
            return total / count
    ''', label="step before backward", words=('before backward', )),
    Answer("06.train_one_epoch", "fail", '''
        def train_one_epoch(model, loader, loss_fn, optimizer, device):
            model.train()
            total, count = 0.0, 0
            for x, y in loader:
                x.to(device)
                y.to(device)
                optimizer.zero_grad()
                loss = loss_fn(model(x), y)
                loss.backward()
                optimizer.step()
                total += loss.item() * len(y)
                count += len(y)
            return total / count
    ''', label="x.to(device) without assigning the result", words=("device",)),
    Answer("06.train_one_epoch", "fail", '''
        def train_one_epoch(model, loader, loss_fn, optimizer, device):
            model.train()
            total, count = 0.0, 0
            for x, y in loader:
                x = x.to(device)
                optimizer.zero_grad()
                loss = loss_fn(model(x), y)
                loss.backward()
                optimizer.step()
                total += loss.item() * len(y)
                count += len(y)
            return total / count
    ''', label="moves x but not y to the device", words=("device",)),
    Answer("06.train_one_epoch", "fail", '''
        def train_one_epoch(model, loader, loss_fn, optimizer, device):
            model.train()
            total, count = 0.0, 0
            for x, y in loader:
                x, y = x.to(device), y.to(device)
                optimizer.zero_grad()
                loss = loss_fn(torch.softmax(model(x), dim=1), y)
                loss.backward()
                optimizer.step()
                total += loss.item() * len(y)
                count += len(y)
            return total / count
    ''', label="softmax before the loss", words=("softmax",)),
    Answer("06.train_one_epoch", "fail", '''
        def train_one_epoch(model, loader, loss_fn, optimizer, device):
            model.train()
            total = 0.0
            for x, y in loader:
                x, y = x.to(device), y.to(device)
                optimizer.zero_grad()
                loss = loss_fn(model(x), y)
                loss.backward()
                optimizer.step()
                total += loss.item() * len(y)
            return total / len(loader)
    ''', label="weighted sum divided by the number of batches", words=('number of batches', )),
    Answer("06.train_one_epoch", "fail", '''
        def train_one_epoch(model, loader, loss_fn, optimizer, device):
            model.train()
            total, count = 0.0, 0
            for x, y in loader:
                x, y = x.to(device), y.to(device)
                optimizer.zero_grad()
                loss = loss_fn(model(x), y)
                loss.backward()
                optimizer.step()
                total = total + loss * len(y)
                count += len(y)
            return float(total) / count
    ''', label="running sum keeps every batch's graph alive (no detach)", words=('detach', )),
    Answer("06.train_one_epoch", "fail", '''
        def train_one_epoch(model, loader, loss_fn, optimizer, device):
            model.train()
            total, count = 0.0, 0
            for x, y in loader:
                x, y = x.to(device), y.to(device)
                optimizer.zero_grad()
                loss = loss_fn(model(x), y)
                loss.backward()
                total += loss.item() * len(y)
                count += len(y)
            optimizer.step()
            return total / count
    ''', label="zero_grad every batch but a single optimizer.step() after the loop", words=('every batch', )),
    # ------------------------------------------------------------------ 06.evaluate
    Answer("06.evaluate", "ok", '''
        def evaluate(model, loader, device):
            model.eval()
            correct, total = 0, 0
            with torch.inference_mode():
                for x, y in loader:
                    x, y = x.to(device), y.to(device)
                    correct += (model(x).argmax(dim=1) == y).sum().item()
                    total += len(y)
            return correct / total
    ''', label="inference_mode, argmax(dim=1), .item() per batch"),
    Answer("06.evaluate", "ok", '''
        def evaluate(model, loader, device):
            model.eval()
            correct = torch.zeros((), device=device)
            n = 0
            with torch.no_grad():
                for x, y in loader:
                    x, y = x.to(device), y.to(device)
                    _, predicted = torch.max(model(x), 1)
                    correct += (predicted == y).sum()
                    n += y.size(0)
            return correct.item() / n
    ''', label="no_grad, torch.max indices, tensor count"),
    Answer("06.evaluate", "ok", '''
        @torch.no_grad()
        def evaluate(model: nn.Module, loader, device) -> float:
            """Accuracy in [0, 1] over every sample of loader."""
            model.train(False)
            hits = []
            for inputs, targets in loader:
                logits = model(inputs.to(device))
                hits.append(logits.argmax(dim=-1).eq(targets.to(device)))
            return torch.cat(hits).float().mean().item()
    ''', label="no_grad decorator, cat of hits, mean"),
    Answer("06.evaluate", "ok", '''
        def evaluate(model, loader, device):
            model.eval()
            previous = torch.is_grad_enabled()
            torch.set_grad_enabled(False)
            try:
                correct = total = 0
                for x, y in loader:
                    x, y = x.to(device), y.to(device)
                    probs = torch.softmax(model(x), dim=1)
                    correct += int((probs.argmax(1) == y).sum())
                    total += y.numel()
            finally:
                torch.set_grad_enabled(previous)
            return float(correct / total)
    ''', label="set_grad_enabled restored in finally, softmax then argmax"),
    Answer("06.evaluate", "ok", '''
        def _batch_hits(model, x, y):
            return (model(x).argmax(dim=1) == y).sum()

        def evaluate(model, loader, device):
            model.eval()
            with torch.inference_mode():
                pairs = [(_batch_hits(model, x.to(device), y.to(device)), len(y)) for x, y in loader]
            hits = sum(int(h) for h, _ in pairs)
            return hits / sum(n for _, n in pairs)
    ''', label="helper + list comprehension", name="evaluate"),
    Answer("06.evaluate", "ok", '''
        def evaluate(model, loader, device):
            was_training = model.training
            model.eval()
            correct, count = 0, 0
            with torch.inference_mode():
                for batch in loader:
                    x, y = batch[0].to(device), batch[1].to(device)
                    pred = model(x).max(dim=1).indices
                    for p, t in zip(pred.tolist(), y.tolist()):
                        correct += int(p == t)
                        count += 1
            return correct / count
    ''', label="per-sample loop with .max().indices"),
    Answer("06.evaluate", "fail", '''
        def evaluate(model, loader, device):
            correct, total = 0, 0
            with torch.inference_mode():
                for x, y in loader:
                    x, y = x.to(device), y.to(device)
                    correct += (model(x).argmax(dim=1) == y).sum().item()
                    total += len(y)
            return correct / total
    ''', label="no model.eval()", words=('eval()', )),
    Answer("06.evaluate", "fail", '''
        def evaluate(model, loader, device):
            model.eval
            correct, total = 0, 0
            with torch.inference_mode():
                for x, y in loader:
                    x, y = x.to(device), y.to(device)
                    correct += (model(x).argmax(dim=1) == y).sum().item()
                    total += len(y)
            return correct / total
    ''', label="model.eval without parentheses", words=('eval()', )),
    Answer("06.evaluate", "fail", '''
        def evaluate(model, loader, device):
            model.eval()
            correct, total = 0, 0
            for x, y in loader:
                x, y = x.to(device), y.to(device)
                correct += (model(x).argmax(dim=1) == y).sum().item()
                total += len(y)
            return correct / total
    ''', label="tracks gradients (no no_grad/inference_mode)", words=("grad",)),
    Answer("06.evaluate", "fail", '''
        def evaluate(model, loader, device):
            model.eval()
            torch.set_grad_enabled(False)
            correct, total = 0, 0
            for x, y in loader:
                x, y = x.to(device), y.to(device)
                correct += (model(x).argmax(dim=1) == y).sum().item()
                total += len(y)
            return correct / total
    ''', label="switches autograd off globally and leaves it off", words=('set_grad_enabled', )),
    Answer("06.evaluate", "fail", '''
        def evaluate(model, loader, device):
            model.eval()
            correct, total = 0, 0
            with torch.inference_mode():
                for x, y in loader:
                    x, y = x.to(device), y.to(device)
                    correct += (model(x).argmax(dim=0) == y).sum().item()
                    total += len(y)
            return correct / total
    ''', label="argmax over dim 0 (the batch)", words=('dim=1', )),
    Answer("06.evaluate", "fail", '''
        def evaluate(model, loader, device):
            model.eval()
            accs = []
            with torch.inference_mode():
                for x, y in loader:
                    x, y = x.to(device), y.to(device)
                    accs.append((model(x).argmax(dim=1) == y).float().mean().item())
            return sum(accs) / len(accs)
    ''', label="mean of per-batch accuracies (short last batch over-weighted)", words=('per-batch', )),
    Answer("06.evaluate", "fail", '''
        def evaluate(model, loader, device):
            model.eval()
            correct = 0
            with torch.inference_mode():
                for x, y in loader:
                    x, y = x.to(device), y.to(device)
                    correct += (model(x).argmax(dim=1) == y).sum().item()
            return correct / (len(loader) * loader.batch_size)
    ''', label="divides by len(loader) * batch_size", words=("last batch",)),
    Answer("06.evaluate", "fail", '''
        def evaluate(model, loader, device):
            model.eval()
            correct, total = 0, 0
            with torch.inference_mode():
                for x, y in loader:
                    x, y = x.to(device), y.to(device)
                    correct += (model(x).argmax(dim=1) == y).sum()
                    total += len(y)
            return correct / total
    ''', label="returns a tensor", words=("float",)),
    Answer("06.evaluate", "fail", '''
        def evaluate(model, loader, device):
            model.eval()
            correct, total = 0, 0
            with torch.inference_mode():
                for x, y in loader:
                    x, y = x.to(device), y.to(device)
                    correct += (model(x).argmax(dim=1) == y).sum().item()
                    total += len(y)
            return 100.0 * correct / total
    ''', label="returns a percentage", words=('percentage', )),
    Answer("06.evaluate", "fail", '''
        def evaluate(model, loader, device):
            model.eval()
            correct, total = 0, 0
            with torch.inference_mode():
                for x, y in loader:
                    x, y = x.to(device), y.to(device)
                    correct += (model(x).argmax(dim=1) == y).sum().item()
                    total += len(y)
            return correct
    ''', label="returns the count of correct samples", words=('correct / total', )),
    Answer("06.evaluate", "fail", '''
        def evaluate(model, loader, device):
            model.eval()
            correct, total = 0, 0
            with torch.inference_mode():
                for x, y in loader:
                    x, y = x.to(device), y.to(device)
                    values, _ = torch.max(model(x), 1)
                    correct += (values == y).sum().item()
                    total += len(y)
            return correct / total
    ''', label="uses torch.max values instead of indices", words=('indices', )),
    Answer("06.evaluate", "fail", '''
        def evaluate(model, loader, device):
            model.eval()
            correct, total = 0, 0
            with torch.inference_mode():
                for x, y in loader:
                    x, y = x.to(device), y.to(device)
                    correct += (model(x).squeeze().argmax(dim=1) == y).sum().item()
                    total += len(y)
            return correct / total
    ''', label="squeeze() breaks a last batch of one sample", words=("single",)),
    Answer("06.evaluate", "fail", '''
        def evaluate(model, loader, device):
            model.eval()
            correct, total = 0, 0
            with torch.inference_mode():
                for x, y in loader:
                    x, y = x.to(device), y.to(device)
                    pred = model(x).argmax(dim=1, keepdim=True)
                    correct += (pred == y).sum().item()
                    total += len(y)
            return correct / total
    ''', label="keepdim=True: [B,1] == [B] broadcasts to [B,B]", words=('broadcast', )),
    Answer("06.evaluate", "fail", '''
        def evaluate(model, loader, device):
            model.eval()
            correct, total = 0, 0
            with torch.inference_mode():
                for x, y in loader:
                    x, y = x.to(device), y.to(device)
                    correct += (model(x).argmax() == y).sum().item()
                    total += len(y)
            return correct / total
    ''', label="argmax without dim (over the flattened batch)", words=('dim=1', )),
    Answer("06.evaluate", "fail", '''
        def evaluate(model, loader, device):
            model.eval()
            correct, total = 0, 0
            with torch.inference_mode():
                for x, y in loader:
                    x, y = x.to(device), y.to(device)
                    correct += (model(x).argmax(dim=1) == y).sum().item()
                    total += len(y)
            return correct // total
    ''', label="integer division", words=('integer division', )),
    Answer("06.evaluate", "fail", '''
        def evaluate(model, loader, device):
            model.eval()
            with torch.inference_mode():
                x, y = next(iter(loader))
                x, y = x.to(device), y.to(device)
                return (model(x).argmax(dim=1) == y).float().mean().item()
    ''', label="only the first batch", words=('first batch', )),
    Answer("06.evaluate", "fail", '''
        def evaluate(model, loader, device):
            model.eval()
            correct, total = 0, 0
            with torch.inference_mode():
                for x, y in loader:
                    x = x.to(device)
                    correct += (model(x).argmax(dim=1) == y).sum().item()
                    total += len(y)
            return correct / total
    ''', label="never moves y to the device", words=('device', )),
    Answer("06.evaluate", "fail", '''
        def evaluate(model, loader, device):
            model.eval()
            correct, total = 0, 0
            with torch.inference_mode():
                for x, y in loader:
                    x, y = x.to(device), y.to(device)
                    pred = (torch.sigmoid(model(x)) > 0.5).long().sum(dim=1)
                    correct += (pred == y).sum().item()
                    total += len(y)
            return correct / total
    ''', label="sigmoid threshold instead of argmax", words=('sigmoid', )),
    # ------------------------------------------------------------------ 06.clipped_step
    Answer("06.clipped_step", "ok", '''
        def clipped_step(model, loss_fn, x, y, optimizer, max_norm):
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            optimizer.step()
            return norm.item()
    ''', label="textbook"),
    Answer("06.clipped_step", "ok", '''
        def clipped_step(model, loss_fn, x, y, optimizer, max_norm):
            model.zero_grad(set_to_none=True)
            loss_fn(model(x), y).backward()
            params = [p for p in model.parameters() if p.grad is not None]
            total = nn.utils.get_total_norm([p.grad for p in params])
            nn.utils.clip_grads_with_norm_(params, max_norm, total)
            optimizer.step()
            return float(total)
    ''', label="get_total_norm + clip_grads_with_norm_"),
    Answer("06.clipped_step", "ok", '''
        def clipped_step(model, loss_fn, x, y, optimizer, max_norm):
            optimizer.zero_grad(set_to_none=False)
            loss = loss_fn(model(x), y)
            loss.backward()
            grads = [p.grad for p in model.parameters() if p.grad is not None]
            total = torch.sqrt(sum((g.detach() ** 2).sum() for g in grads))
            coef = max_norm / (total + 1e-6)
            if coef < 1:
                for g in grads:
                    g.mul_(coef)
            optimizer.step()
            return total.item()
    ''', label="manual total norm and scaling"),
    Answer("06.clipped_step", "ok", '''
        def clipped_step(model: nn.Module, loss_fn, x, y, optimizer, max_norm: float) -> float:
            """One SGD-style step with the total gradient norm clipped to max_norm."""
            for group in optimizer.param_groups:
                for p in group["params"]:
                    p.grad = None
            out = model(x)
            loss = loss_fn(out, y)
            loss.backward()
            params = [p for g in optimizer.param_groups for p in g["params"]]
            norm = torch.nn.utils.clip_grad_norm_(params, max_norm=max_norm, norm_type=2.0)
            optimizer.step()
            return float(norm)
    ''', label="clears and clips the optimizer's params (all groups)"),
    Answer("06.clipped_step", "ok", '''
        def clipped_step(model, loss_fn, x, y, optimizer, max_norm):
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            norms = torch.stack([p.grad.norm(2) for p in model.parameters() if p.grad is not None])
            total = norms.norm(2)
            nn.utils.clip_grad_norm_(model.parameters(), max_norm, foreach=True)
            optimizer.step()
            return total.item()
    ''', label="norm of per-parameter norms, then clip_grad_norm_(foreach=True)"),
    Answer("06.clipped_step", "ok", '''
        def _backward(model, loss_fn, x, y):
            loss = loss_fn(model(x), y)
            loss.backward()
            return loss

        def clipped_step(model, loss_fn, x, y, optimizer, max_norm):
            optimizer.zero_grad()
            _backward(model, loss_fn, x, y)
            params = list(model.parameters())
            before = nn.utils.clip_grad_norm_(params, max_norm)
            optimizer.step()
            return before.item()
    ''', label="helper for backward, list of params", name="clipped_step"),
    Answer("06.clipped_step", "fail", '''
        def clipped_step(model, loss_fn, x, y, optimizer, max_norm):
            loss = loss_fn(model(x), y)
            loss.backward()
            norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            optimizer.step()
            return norm.item()
    ''', label="no zero_grad (old gradients added)", words=("zero_grad",)),
    Answer("06.clipped_step", "fail", '''
        def clipped_step(model, loss_fn, x, y, optimizer, max_norm):
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            return norm.item()
    ''', label="clips after step", words=('after optimizer.step()', )),
    Answer("06.clipped_step", "fail", '''
        def clipped_step(model, loss_fn, x, y, optimizer, max_norm):
            optimizer.zero_grad(set_to_none=False)
            norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            return norm.item()
    ''', label="clips before backward", words=('before backward()', )),
    Answer("06.clipped_step", "fail", '''
        def clipped_step(model, loss_fn, x, y, optimizer, max_norm):
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            norm = nn.utils.get_total_norm([p.grad for p in model.parameters() if p.grad is not None])
            optimizer.step()
            return norm.item()
    ''', label="returns the norm after clipping", words=('before clipping', )),
    Answer("06.clipped_step", "fail", '''
        def clipped_step(model, loss_fn, x, y, optimizer, max_norm):
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            optimizer.step()
            return norm
    ''', label="returns a tensor", words=("float",)),
    Answer("06.clipped_step", "fail", '''
        def clipped_step(model, loss_fn, x, y, optimizer, max_norm):
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            norm = nn.utils.get_total_norm([p.grad for p in model.parameters() if p.grad is not None])
            nn.utils.clip_grad_value_(model.parameters(), max_norm)
            optimizer.step()
            return norm.item()
    ''', label="clip_grad_value_ instead of the norm", words=('clip_grad_value_', )),
    Answer("06.clipped_step", "fail", '''
        def clipped_step(model, loss_fn, x, y, optimizer, max_norm):
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            optimizer.step()
            return min(norm.item(), max_norm)
    ''', label="returns the norm capped at max_norm", words=('before clipping', )),
    Answer("06.clipped_step", "fail", '''
        def clipped_step(model, loss_fn, x, y, optimizer, max_norm):
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            return norm.item()
    ''', label="forgets optimizer.step()", words=('optimizer.step()', )),
    Answer("06.clipped_step", "fail", '''
        def clipped_step(model, loss_fn, x, y, optimizer, max_norm):
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            total = sum(p.grad.norm() for p in model.parameters() if p.grad is not None)
            nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            optimizer.step()
            return float(total)
    ''', label="sum of per-parameter norms, not the total L2 norm", words=('sum of', )),
    Answer("06.clipped_step", "fail", '''
        def clipped_step(model, loss_fn, x, y, optimizer, max_norm):
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            norm = nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            return norm.item()
    ''', label="hard-coded max_norm=1.0", words=('max_norm=', )),
    Answer("06.clipped_step", "fail", '''
        def clipped_step(model, loss_fn, x, y, optimizer, max_norm):
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            grads = [p.grad for p in model.parameters() if p.grad is not None]
            total = torch.sqrt(sum((g ** 2).sum() for g in grads))
            for g in grads:
                g.mul_(max_norm / total)
            optimizer.step()
            return total.item()
    ''', label="always rescales to max_norm (also scales small gradients up)", words=('below max_norm', )),
    Answer("06.clipped_step", "fail", '''
        def clipped_step(model, loss_fn, x, y, optimizer, max_norm):
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            params = model.parameters()
            total = nn.utils.get_total_norm([p.grad for p in params if p.grad is not None])
            nn.utils.clip_grad_norm_(params, max_norm)  # the generator is already exhausted
            optimizer.step()
            return total.item()
    ''', label="generator of parameters exhausted before clipping (nothing clipped)", words=('generator', )),
    Answer("06.clipped_step", "fail", '''
        def clipped_step(model, loss_fn, x, y, optimizer, max_norm):
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            norm = nn.utils.clip_grad_norm_(optimizer.param_groups[0]["params"], max_norm)
            optimizer.step()
            return norm.item()
    ''', label="clips only the first param group", words=('group', )),
    Answer("06.clipped_step", "fail", '''
        def clipped_step(model, loss_fn, x, y, optimizer, max_norm):
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.zero_grad()
            norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            optimizer.step()
            return norm.item()
    ''', label="zero_grad between backward and clipping", words=('cleared', )),
    Answer("06.clipped_step", "fail", '''
        def clipped_step(model, loss_fn, x, y, optimizer, max_norm):
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            optimizer.step()
            return norm.item() ** 2
    ''', label="returns the squared norm", words=('squared', )),
    Answer("06.clipped_step", "fail", '''
        def clipped_step(model, loss_fn, x, y, optimizer, max_norm):
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm, norm_type=1)
            optimizer.step()
            return norm.item()
    ''', label="L1 norm instead of the L2 total norm", words=('norm_type', )),
    Answer("06.clipped_step", "fail", '''
        def clipped_step(model, loss_fn, x, y, optimizer, max_norm):
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            norm = 0.0
            for p in model.parameters():
                if p.grad is not None:
                    norm = max(norm, nn.utils.clip_grad_norm_([p], max_norm).item())
            optimizer.step()
            return norm
    ''', label="clips each parameter separately", words=('each parameter', )),
    Answer("06.clipped_step", "ok", '''
        def clipped_step(model, loss_fn, x, y, optimizer, max_norm):
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            optimizer.step()
            optimizer.zero_grad()
            return norm.item()
    ''', label="also clears the gradients after the step"),
]
