"""Blind answers for notebook 09, written from notebooks/09_checkpointing.ipynb only."""
from tests.blind import Answer

ANSWERS = [
    Answer('09.save_checkpoint', 'ok', r'''
        def save_checkpoint(path, model, optimizer, scheduler, generator, epoch, step, best_metric):
            from course_utils.checkpoint import capture_rng_state
            checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                          "scheduler": scheduler.state_dict(), "epoch": epoch, "step": step,
                          "best_metric": best_metric, "rng": capture_rng_state(generator)}
            import os
            from pathlib import Path
            path = Path(path)
            tmp = path.with_name(path.name + ".tmp")
            with open(tmp, "wb") as f:
                torch.save(checkpoint, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
    ''', label="canonical: Path, .tmp next to it, flush, fsync, os.replace"),
    Answer('09.save_checkpoint', 'ok', r'''
        def save_checkpoint(path, model, optimizer, scheduler, generator, epoch, step, best_metric):
            import os, tempfile
            from course_utils.checkpoint import capture_rng_state
            folder = os.path.dirname(os.path.abspath(os.fspath(path)))
            state = dict(model=model.state_dict(), optimizer=optimizer.state_dict(), scheduler=scheduler.state_dict(),
                         epoch=epoch, step=step, best_metric=best_metric, rng=capture_rng_state(generator))
            with tempfile.NamedTemporaryFile(dir=folder, delete=False, suffix=".tmp") as f:
                torch.save(state, f)
                f.flush()
                os.fsync(f.fileno())
                tmp_name = f.name
            os.replace(tmp_name, os.fspath(path))
    ''', label="NamedTemporaryFile in the same folder, os.fspath"),
    Answer('09.save_checkpoint', 'ok', r'''
        def save_checkpoint(path, model, optimizer, scheduler, generator, epoch, step, best_metric):
            import os, tempfile
            from course_utils.checkpoint import capture_rng_state
            target = os.fspath(path)
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(target) or ".", prefix=".ckpt-", suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as f:
                    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                                "scheduler": scheduler.state_dict(), "epoch": epoch, "step": step,
                                "best_metric": best_metric, "rng": capture_rng_state(generator)}, f)
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, target)
            except BaseException:
                if os.path.exists(tmp):
                    os.remove(tmp)
                raise
    ''', label="mkstemp + fdopen, cleans up the temp file on error"),
    Answer('09.save_checkpoint', 'ok', r'''
        def save_checkpoint(path, model, optimizer, scheduler, generator, epoch, step, best_metric):
            from course_utils.checkpoint import capture_rng_state
            checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                          "scheduler": scheduler.state_dict(), "epoch": epoch, "step": step,
                          "best_metric": best_metric, "rng": capture_rng_state(generator)}
            import io, os
            from pathlib import Path
            buffer = io.BytesIO()
            torch.save(checkpoint, buffer)
            path = Path(path)
            tmp = path.parent / f".{path.name}.partial"
            with tmp.open("wb") as f:
                f.write(buffer.getvalue())
                f.flush()
                os.fsync(f.fileno())
            tmp.replace(path)
            dir_fd = os.open(path.parent, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
    ''', label="serialise to BytesIO, Path.replace, fsync the folder too"),
    Answer('09.save_checkpoint', 'ok', r'''
        def _write_atomically(obj, path):
            import os
            tmp = str(path) + ".tmp"
            with open(tmp, "wb") as f:
                torch.save(obj, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, str(path))

        def save_checkpoint(path, model, optimizer, scheduler, generator, epoch, step, best_metric) -> None:
            """Full checkpoint, written atomically."""
            from course_utils.checkpoint import capture_rng_state
            _write_atomically({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                               "scheduler": scheduler.state_dict(), "epoch": int(epoch), "step": int(step),
                               "best_metric": best_metric, "rng": capture_rng_state(generator)}, path)
    ''', label="helper, str(path) + '.tmp'", name='save_checkpoint'),
    Answer('09.save_checkpoint', 'ok', r'''
        def save_checkpoint(path, model, optimizer, scheduler, generator, epoch, step, best_metric):
            from course_utils.checkpoint import capture_rng_state
            checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                          "scheduler": scheduler.state_dict(), "epoch": epoch, "step": step,
                          "best_metric": best_metric, "rng": capture_rng_state(generator)}
            from os import fsync, replace
            from pathlib import Path
            final = Path(path)
            tmp = final.with_suffix(final.suffix + ".tmp")
            f = open(tmp, "wb")
            try:
                torch.save(checkpoint, f)
                f.flush()
                fsync(f.fileno())
            finally:
                f.close()
            replace(tmp, final)
    ''', label="from os import fsync, replace (names bound at call time)"),
    Answer('09.save_checkpoint', 'ok', r'''
        def save_checkpoint(path, model, optimizer, scheduler, generator, epoch, step, best_metric):
            from course_utils.checkpoint import capture_rng_state
            checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                          "scheduler": scheduler.state_dict(), "epoch": epoch, "step": step,
                          "best_metric": best_metric, "rng": capture_rng_state(generator)}
            import os
            tmp = f"{os.fspath(path)}.tmp"
            torch.save(checkpoint, tmp)
            with open(tmp, "rb+") as f:
                os.fsync(f.fileno())
            os.replace(tmp, path)
    ''', label="torch.save(obj, tmp), then reopens the temp file to fsync it"),
    Answer('09.save_checkpoint', 'fail', r'''
        def save_checkpoint(path, model, optimizer, scheduler, generator, epoch, step, best_metric):
            from course_utils.checkpoint import capture_rng_state
            checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                          "scheduler": scheduler.state_dict(), "epoch": epoch, "step": step,
                          "best_metric": best_metric, "rng": capture_rng_state(generator)}
            import os
            tmp = f"{os.fspath(path)}.tmp"
            torch.save(checkpoint, tmp)
            os.replace(tmp, path)
            fd = os.open(os.path.dirname(os.path.abspath(tmp)), os.O_RDONLY)
            os.fsync(fd)
            os.close(fd)
    ''', label="fsyncs only the folder, never the temp file", words=('fsync',)),
    Answer('09.save_checkpoint', 'fail', r'''
        def save_checkpoint(path, model, optimizer, scheduler, generator, epoch, step, best_metric):
            from course_utils.checkpoint import capture_rng_state
            checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                          "scheduler": scheduler.state_dict(), "epoch": epoch, "step": step,
                          "best_metric": best_metric, "rng": capture_rng_state(generator)}
            torch.save(checkpoint, path)
    ''', label="torch.save straight to path (not atomic)", words=('os.replace',)),
    Answer('09.save_checkpoint', 'fail', r'''
        def save_checkpoint(path, model, optimizer, scheduler, generator, epoch, step, best_metric):
            from course_utils.checkpoint import capture_rng_state
            checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                          "scheduler": scheduler.state_dict(), "epoch": epoch, "step": step,
                          "best_metric": best_metric, "rng": capture_rng_state(generator)}
            import os, tempfile
            fd, tmp = tempfile.mkstemp(suffix=".tmp")
            with os.fdopen(fd, "wb") as f:
                torch.save(checkpoint, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
    ''', label="temp file in the system temp folder, not next to path", words=('same folder',)),
    Answer('09.save_checkpoint', 'fail', r'''
        def save_checkpoint(path, model, optimizer, scheduler, generator, epoch, step, best_metric):
            from course_utils.checkpoint import capture_rng_state
            checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                          "scheduler": scheduler.state_dict(), "epoch": epoch, "step": step,
                          "best_metric": best_metric, "rng": capture_rng_state(generator)}
            import os
            tmp = str(path) + ".tmp"
            with open(tmp, "wb") as f:
                torch.save(checkpoint, f)
                f.flush()
            os.replace(tmp, path)
    ''', label="no os.fsync", words=('fsync',)),
    Answer('09.save_checkpoint', 'ok', r'''
        def save_checkpoint(path, model, optimizer, scheduler, generator, epoch, step, best_metric):
            from course_utils.checkpoint import capture_rng_state
            checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                          "scheduler": scheduler.state_dict(), "epoch": epoch, "step": step,
                          "best_metric": best_metric, "rng": capture_rng_state(generator)}
            import os
            tmp = str(path) + ".tmp"
            with open(tmp, "wb") as f:
                torch.save(checkpoint, f)
                os.fsync(f.fileno())
            os.replace(tmp, path)
    ''', label="fsync without an explicit flush (torch.save flushes a file object itself)"),
    Answer('09.save_checkpoint', 'fail', r'''
        def save_checkpoint(path, model, optimizer, scheduler, generator, epoch, step, best_metric):
            from course_utils.checkpoint import capture_rng_state
            checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                          "scheduler": scheduler.state_dict(), "epoch": epoch, "step": step,
                          "best_metric": best_metric, "rng": capture_rng_state(generator)}
            import os
            tmp = str(path) + ".tmp"
            torch.save(checkpoint, tmp)
            os.replace(tmp, path)
    ''', label="torch.save(obj, tmp) then replace: never fsynced", words=('fsync',)),
    Answer('09.save_checkpoint', 'fail', r'''
        def save_checkpoint(path, model, optimizer, scheduler, generator, epoch, step, best_metric):
            from course_utils.checkpoint import capture_rng_state
            checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                          "scheduler": scheduler.state_dict(), "epoch": epoch, "step": step,
                          "best_metric": best_metric, "rng": capture_rng_state(generator)}
            import os
            tmp = str(path) + ".tmp"
            with open(tmp, "wb") as f:
                torch.save(checkpoint, f)
                f.flush()
                os.fsync(f.fileno())
            os.rename(tmp, path)
    ''', label="os.rename instead of os.replace", words=('os.replace', )),
    Answer('09.save_checkpoint', 'fail', r'''
        def save_checkpoint(path, model, optimizer, scheduler, generator, epoch, step, best_metric):
            from course_utils.checkpoint import capture_rng_state
            checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                          "scheduler": scheduler.state_dict(), "epoch": epoch, "step": step,
                          "best_metric": best_metric, "rng": capture_rng_state(generator)}
            import os, shutil
            tmp = str(path) + ".tmp"
            with open(tmp, "wb") as f:
                torch.save(checkpoint, f)
                f.flush()
                os.fsync(f.fileno())
            shutil.copyfile(tmp, path)
    ''', label="copies the temp file instead of renaming (not atomic, temp left behind)", words=('os.replace',)),
    Answer('09.save_checkpoint', 'fail', r'''
        def save_checkpoint(path, model, optimizer, scheduler, generator, epoch, step, best_metric):
            from course_utils.checkpoint import capture_rng_state
            checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                          "scheduler": scheduler.state_dict(), "epoch": epoch, "step": step,
                          "best_metric": best_metric, "rng": capture_rng_state(generator)}
            import os
            tmp = path + ".tmp"
            with open(tmp, "wb") as f:
                torch.save(checkpoint, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
    ''', label="path + '.tmp' (only works for str)", words=('Path',)),
    Answer('09.save_checkpoint', 'fail', r'''
        def save_checkpoint(path, model, optimizer, scheduler, generator, epoch, step, best_metric):
            from course_utils.checkpoint import capture_rng_state
            checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                          "scheduler": scheduler.state_dict(), "epoch": epoch, "step": step,
                          "best_metric": best_metric, "rng": capture_rng_state(generator)}
            import os
            tmp = path.with_suffix(".tmp")
            with open(tmp, "wb") as f:
                torch.save(checkpoint, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
    ''', label="path.with_suffix (only works for Path)", words=('str',)),
    Answer('09.save_checkpoint', 'fail', r'''
        def save_checkpoint(path, model, optimizer, scheduler, generator, epoch, step, best_metric):
            from course_utils.checkpoint import capture_rng_state
            checkpoint = {"model": model, "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                          "epoch": epoch, "step": step, "best_metric": best_metric, "rng": capture_rng_state(generator)}
            import os
            from pathlib import Path
            path = Path(path)
            tmp = path.with_name(path.name + ".tmp")
            with open(tmp, "wb") as f:
                torch.save(checkpoint, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
    ''', label="saves the model object instead of its state_dict", words=('Sequential', )),
    Answer('09.save_checkpoint', 'fail', r'''
        def save_checkpoint(path, model, optimizer, scheduler, generator, epoch, step, best_metric):
            from course_utils.checkpoint import capture_rng_state
            checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                          "epoch": epoch, "step": step, "best_metric": best_metric}
            import os
            from pathlib import Path
            path = Path(path)
            tmp = path.with_name(path.name + ".tmp")
            with open(tmp, "wb") as f:
                torch.save(checkpoint, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
    ''', label="no rng entry", words=('rng',)),
    Answer('09.save_checkpoint', 'fail', r'''
        def save_checkpoint(path, model, optimizer, scheduler, generator, epoch, step, best_metric):
            from course_utils.checkpoint import capture_rng_state
            checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                          "epoch": epoch, "step": step, "best_metric": best_metric, "rng": torch.get_rng_state()}
            import os
            from pathlib import Path
            path = Path(path)
            tmp = path.with_name(path.name + ".tmp")
            with open(tmp, "wb") as f:
                torch.save(checkpoint, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
    ''', label="rng = torch.get_rng_state() only (NumPy, random, generator missing)", words=('capture_rng_state', )),
    Answer('09.save_checkpoint', 'fail', r'''
        def save_checkpoint(path, model, optimizer, scheduler, generator, epoch, step, best_metric):
            from course_utils.checkpoint import capture_rng_state
            checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                          "epoch": epoch, "step": step, "best_metric": best_metric, "rng": capture_rng_state()}
            import os
            from pathlib import Path
            path = Path(path)
            tmp = path.with_name(path.name + ".tmp")
            with open(tmp, "wb") as f:
                torch.save(checkpoint, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
    ''', label="capture_rng_state() without the DataLoader generator", words=('generator',)),
    Answer('09.save_checkpoint', 'fail', r'''
        def save_checkpoint(path, model, optimizer, scheduler, generator, epoch, step, best_metric):
            from course_utils.checkpoint import capture_rng_state
            checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                          "epoch": epoch, "step": step, "best_metric": best_metric, "rng": capture_rng_state(generator)}
            import os
            from pathlib import Path
            path = Path(path)
            tmp = path.with_name(path.name + ".tmp")
            with open(tmp, "wb") as f:
                torch.save(checkpoint, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
    ''', label="no scheduler entry", words=('scheduler',)),
    Answer('09.save_checkpoint', 'fail', r'''
        def save_checkpoint(path, model, optimizer, scheduler, generator, epoch, step, best_metric):
            from course_utils.checkpoint import capture_rng_state
            checkpoint = {"model_state_dict": model.state_dict(), "optimizer_state_dict": optimizer.state_dict(),
                          "scheduler_state_dict": scheduler.state_dict(), "epoch": epoch, "step": step,
                          "best_metric": best_metric, "rng": capture_rng_state(generator)}
            import os
            from pathlib import Path
            path = Path(path)
            tmp = path.with_name(path.name + ".tmp")
            with open(tmp, "wb") as f:
                torch.save(checkpoint, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
    ''', label="tutorial key names (model_state_dict ...)", words=('model',)),
    Answer('09.save_checkpoint', 'fail', r'''
        def save_checkpoint(path, model, optimizer, scheduler, generator, epoch, step, best_metric):
            from course_utils.checkpoint import capture_rng_state
            checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                          "epoch": step, "step": epoch, "best_metric": best_metric, "rng": capture_rng_state(generator)}
            import os
            from pathlib import Path
            path = Path(path)
            tmp = path.with_name(path.name + ".tmp")
            with open(tmp, "wb") as f:
                torch.save(checkpoint, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
    ''', label="epoch and step swapped", words=('epoch',)),
    Answer('09.save_checkpoint', 'fail', r'''
        def save_checkpoint(path, model, optimizer, scheduler, generator, epoch, step, best_metric):
            from course_utils.checkpoint import capture_rng_state
            checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                          "epoch": epoch, "step": step, "best_metric": float(best_metric), "rng": capture_rng_state(generator)}
            import os
            from pathlib import Path
            path = Path(path)
            tmp = path.with_name(path.name + ".tmp")
            with open(tmp, "wb") as f:
                torch.save(checkpoint, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
    ''', label="float(best_metric) crashes when best_metric is None", words=('None', )),
    Answer('09.save_checkpoint', 'fail', r'''
        def save_checkpoint(path, model, optimizer, scheduler, generator, epoch, step, best_metric):
            from course_utils.checkpoint import capture_rng_state
            checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                          "epoch": epoch, "step": step, "best_metric": best_metric, "rng": capture_rng_state(generator),
                          "generator": generator}
            import os
            from pathlib import Path
            path = Path(path)
            tmp = path.with_name(path.name + ".tmp")
            with open(tmp, "wb") as f:
                torch.save(checkpoint, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
    ''', label="also pickles the torch.Generator object", words=('Generator', )),
    Answer('09.load_checkpoint', 'ok', r'''
        def load_checkpoint(path, model, optimizer, scheduler, generator, map_location="cpu"):
            from course_utils.checkpoint import restore_rng_state
            ckpt = torch.load(path, map_location=map_location, weights_only=True)
            model.load_state_dict(ckpt["model"])
            optimizer.load_state_dict(ckpt["optimizer"])
            scheduler.load_state_dict(ckpt["scheduler"])
            restore_rng_state(ckpt["rng"], generator)
            return ckpt
    ''', label="canonical"),
    Answer('09.load_checkpoint', 'ok', r'''
        def load_checkpoint(path, model, optimizer, scheduler, generator, map_location="cpu"):
            from course_utils.checkpoint import restore_rng_state
            from pathlib import Path
            checkpoint = torch.load(Path(path), map_location=map_location)  # weights_only=True is the default
            for obj, key in ((model, "model"), (optimizer, "optimizer"), (scheduler, "scheduler")):
                obj.load_state_dict(checkpoint[key])
            restore_rng_state(checkpoint["rng"], generator)
            return checkpoint
    ''', label="default weights_only, loop over the three objects"),
    Answer('09.load_checkpoint', 'ok', r'''
        def load_checkpoint(path, model, optimizer, scheduler, generator, map_location="cpu"):
            import course_utils.checkpoint as ck
            with open(path, "rb") as f:
                state = torch.load(f, map_location=map_location, weights_only=True)
            report = model.load_state_dict(state["model"], strict=True)
            assert not report.missing_keys and not report.unexpected_keys, report
            optimizer.load_state_dict(state["optimizer"])
            scheduler.load_state_dict(state["scheduler"])
            ck.restore_rng_state(state["rng"], generator=generator)
            return state
    ''', label="open file object, check the load report"),
    Answer('09.load_checkpoint', 'ok', r'''
        def load_checkpoint(path, model, optimizer, scheduler, generator, map_location="cpu"):
            from course_utils.checkpoint import restore_rng_state
            ckpt = torch.load(str(path), weights_only=True, map_location=map_location)
            restore_rng_state(ckpt["rng"], generator)
            scheduler.load_state_dict(ckpt["scheduler"])
            optimizer.load_state_dict(ckpt["optimizer"])
            model.load_state_dict(ckpt["model"])
            return ckpt
    ''', label="restores in reverse order, str(path)"),
    Answer('09.load_checkpoint', 'ok', r'''
        def _restore(ckpt, model, optimizer, scheduler, generator):
            from course_utils.checkpoint import restore_rng_state
            model.load_state_dict(ckpt["model"])
            optimizer.load_state_dict(ckpt["optimizer"])
            scheduler.load_state_dict(ckpt["scheduler"])
            restore_rng_state(ckpt["rng"], generator)

        def load_checkpoint(path, model, optimizer, scheduler, generator, map_location="cpu") -> dict:
            """Restore model, optimizer, scheduler and RNGs; return the checkpoint."""
            ckpt = torch.load(path, map_location=map_location, weights_only=True, mmap=False)
            _restore(ckpt, model, optimizer, scheduler, generator)
            return ckpt
    ''', label="helper function", name='load_checkpoint'),
    Answer('09.load_checkpoint', 'ok', r'''
        def load_checkpoint(path, model, optimizer, scheduler, generator, map_location="cpu"):
            from course_utils.checkpoint import restore_rng_state
            import os
            if not os.path.exists(path):
                raise FileNotFoundError(f"no checkpoint at {path}")
            ckpt = torch.load(os.fspath(path), map_location=map_location, weights_only=True)
            model.load_state_dict(ckpt["model"])
            optimizer.load_state_dict(ckpt["optimizer"])
            scheduler.load_state_dict(ckpt["scheduler"])
            restore_rng_state(ckpt["rng"], generator)
            return dict(ckpt)
    ''', label="checks the file exists, returns a dict copy"),
    Answer('09.load_checkpoint', 'fail', r'''
        def load_checkpoint(path, model, optimizer, scheduler, generator, map_location="cpu"):
            from course_utils.checkpoint import restore_rng_state
            ckpt = torch.load(path, map_location=map_location, weights_only=False)
            model.load_state_dict(ckpt["model"])
            optimizer.load_state_dict(ckpt["optimizer"])
            scheduler.load_state_dict(ckpt["scheduler"])
            restore_rng_state(ckpt["rng"], generator)
            return ckpt
    ''', label="weights_only=False", words=('weights_only',)),
    Answer('09.load_checkpoint', 'fail', r'''
        def load_checkpoint(path, model, optimizer, scheduler, generator, map_location="cpu"):
            from course_utils.checkpoint import restore_rng_state
            ckpt = torch.load(path, map_location="cpu", weights_only=True)
            model.load_state_dict(ckpt["model"])
            optimizer.load_state_dict(ckpt["optimizer"])
            scheduler.load_state_dict(ckpt["scheduler"])
            restore_rng_state(ckpt["rng"], generator)
            return ckpt
    ''', label="ignores map_location (always 'cpu')", words=('map_location',)),
    Answer('09.load_checkpoint', 'fail', r'''
        def load_checkpoint(path, model, optimizer, scheduler, generator, map_location="cpu"):
            from course_utils.checkpoint import restore_rng_state
            ckpt = torch.load(path, weights_only=True)
            model.load_state_dict(ckpt["model"])
            optimizer.load_state_dict(ckpt["optimizer"])
            scheduler.load_state_dict(ckpt["scheduler"])
            restore_rng_state(ckpt["rng"], generator)
            return ckpt
    ''', label="no map_location at all", words=('map_location',)),
    Answer('09.load_checkpoint', 'fail', r'''
        def load_checkpoint(path, model, optimizer, scheduler, generator, map_location="cpu"):
            from course_utils.checkpoint import restore_rng_state
            ckpt = torch.load(path, map_location=map_location, weights_only=True)
            model.load_state_dict(ckpt["model"])
            scheduler.load_state_dict(ckpt["scheduler"])
            restore_rng_state(ckpt["rng"], generator)
            return ckpt
    ''', label="optimizer not restored", words=('optimizer',)),
    Answer('09.load_checkpoint', 'fail', r'''
        def load_checkpoint(path, model, optimizer, scheduler, generator, map_location="cpu"):
            from course_utils.checkpoint import restore_rng_state
            ckpt = torch.load(path, map_location=map_location, weights_only=True)
            model.load_state_dict(ckpt["model"])
            optimizer.load_state_dict(ckpt["optimizer"])
            restore_rng_state(ckpt["rng"], generator)
            return ckpt
    ''', label="scheduler not restored", words=('scheduler',)),
    Answer('09.load_checkpoint', 'fail', r'''
        def load_checkpoint(path, model, optimizer, scheduler, generator, map_location="cpu"):
            from course_utils.checkpoint import restore_rng_state
            ckpt = torch.load(path, map_location=map_location, weights_only=True)
            model.load_state_dict(ckpt["model"])
            optimizer.load_state_dict(ckpt["optimizer"])
            scheduler.load_state_dict(ckpt["scheduler"])
            return ckpt
    ''', label="RNG not restored", words=('rng',)),
    Answer('09.load_checkpoint', 'fail', r'''
        def load_checkpoint(path, model, optimizer, scheduler, generator, map_location="cpu"):
            from course_utils.checkpoint import restore_rng_state
            ckpt = torch.load(path, map_location=map_location, weights_only=True)
            model.load_state_dict(ckpt["model"])
            optimizer.load_state_dict(ckpt["optimizer"])
            scheduler.load_state_dict(ckpt["scheduler"])
            restore_rng_state(ckpt["rng"])
            return ckpt
    ''', label="restore_rng_state without the generator", words=('generator',)),
    Answer('09.load_checkpoint', 'fail', r'''
        def load_checkpoint(path, model, optimizer, scheduler, generator, map_location="cpu"):
            from course_utils.checkpoint import restore_rng_state
            ckpt = torch.load(path, map_location=map_location, weights_only=True)
            model.load_state_dict(ckpt["model"])
            optimizer.load_state_dict(ckpt["optimizer"])
            scheduler.load_state_dict(ckpt["scheduler"])
            torch.set_rng_state(ckpt["rng"]["torch"])
            return ckpt
    ''', label="restores only torch's CPU generator by hand", words=('rng',)),
    Answer('09.load_checkpoint', 'fail', r'''
        def load_checkpoint(path, model, optimizer, scheduler, generator, map_location="cpu"):
            from course_utils.checkpoint import restore_rng_state
            ckpt = torch.load(path, map_location=map_location, weights_only=True)
            model.load_state_dict(ckpt["model"])
            optimizer.load_state_dict(ckpt["optimizer"])
            scheduler.load_state_dict(ckpt["scheduler"])
            restore_rng_state(ckpt["rng"], generator)
            return None
    ''', label="returns nothing", words=('return',)),
    Answer('09.load_checkpoint', 'fail', r'''
        def load_checkpoint(path, model, optimizer, scheduler, generator, map_location="cpu"):
            from course_utils.checkpoint import restore_rng_state
            ckpt = torch.load(path, map_location=map_location, weights_only=True)
            model.load_state_dict(ckpt["model"])
            optimizer.load_state_dict(ckpt["optimizer"])
            scheduler.load_state_dict(ckpt["scheduler"])
            restore_rng_state(ckpt["rng"], generator)
            return ckpt["epoch"]
    ''', label="returns only the epoch", words=('dict',)),
    Answer('09.load_checkpoint', 'fail', r'''
        def load_checkpoint(path, model, optimizer, scheduler, generator, map_location="cpu"):
            from course_utils.checkpoint import restore_rng_state
            ckpt = torch.load(path, map_location=map_location, weights_only=True)
            model.load_state_dict(ckpt["model"], assign=True)
            optimizer.load_state_dict(ckpt["optimizer"])
            scheduler.load_state_dict(ckpt["scheduler"])
            restore_rng_state(ckpt["rng"], generator)
            return ckpt
    ''', label="assign=True: the optimizer keeps the old parameter objects", words=('assign', )),
    Answer('09.load_checkpoint', 'fail', r'''
        def load_checkpoint(path, model, optimizer, scheduler, generator, map_location="cpu"):
            from course_utils.checkpoint import restore_rng_state
            ckpt = torch.load(path, map_location=map_location, weights_only=True)
            model.load_state_dict(ckpt["model"])
            optimizer.load_state_dict(ckpt["optimizer"])
            scheduler.load_state_dict(ckpt["scheduler"])
            restore_rng_state(ckpt["rng"], generator)
            torch.manual_seed(0)
            return ckpt
    ''', label="reseeds torch after restoring", words=('rng',)),
    Answer('09.load_checkpoint', 'fail', r'''
        def load_checkpoint(path, model, optimizer, scheduler, generator, map_location="cpu"):
            from course_utils.checkpoint import restore_rng_state
            ckpt = torch.load(path, map_location=map_location, weights_only=True)
            model.load_state_dict(ckpt)
            optimizer.load_state_dict(ckpt["optimizer"])
            scheduler.load_state_dict(ckpt["scheduler"])
            restore_rng_state(ckpt["rng"], generator)
            return ckpt
    ''', label="loads the whole checkpoint dict into the model", words=('model',)),
    Answer('09.load_checkpoint', 'fail', r'''
        def load_checkpoint(path, model, optimizer, scheduler, generator, map_location="cpu"):
            from course_utils.checkpoint import restore_rng_state
            ckpt = torch.load(path.open("rb"), map_location=map_location, weights_only=True)
            model.load_state_dict(ckpt["model"])
            optimizer.load_state_dict(ckpt["optimizer"])
            scheduler.load_state_dict(ckpt["scheduler"])
            restore_rng_state(ckpt["rng"], generator)
            return ckpt
    ''', label="path.open (only works for Path)", words=('str',)),
    Answer('09.load_checkpoint', 'fail', r'''
        def load_checkpoint(path, model, optimizer, scheduler, generator, map_location="cpu"):
            from course_utils.checkpoint import restore_rng_state
            if not path.endswith(".pt"):
                raise ValueError("not a .pt file")
            ckpt = torch.load(path, map_location=map_location, weights_only=True)
            model.load_state_dict(ckpt["model"])
            optimizer.load_state_dict(ckpt["optimizer"])
            scheduler.load_state_dict(ckpt["scheduler"])
            restore_rng_state(ckpt["rng"], generator)
            return ckpt
    ''', label="path.endswith (only works for str)", words=('Path',)),
    Answer('09.load_checkpoint', 'fail', r'''
        def load_checkpoint(path, model, optimizer, scheduler, generator, map_location="cpu"):
            from course_utils.checkpoint import restore_rng_state
            ckpt = torch.load(path, map_location=map_location, weights_only=True)
            model.load_state_dict(ckpt["model"], strict=False)
            optimizer.load_state_dict(ckpt["optimizer"])
            scheduler.load_state_dict(ckpt["scheduler"])
            restore_rng_state(ckpt["rng"], generator)
            model.train(False)
            return ckpt
    ''', label="leaves the model in eval mode after loading", words=('eval', )),
    Answer('09.load_checkpoint', 'fail', r'''
        def load_checkpoint(path, model, optimizer, scheduler, generator, map_location="cpu"):
            from course_utils.checkpoint import restore_rng_state
            ckpt = torch.load(path, map_location=torch.device(map_location), weights_only=True)
            model.load_state_dict(ckpt["model"])
            optimizer.load_state_dict(ckpt["optimizer"])
            scheduler.load_state_dict(ckpt["scheduler"])
            restore_rng_state(ckpt["rng"], generator)
            return ckpt
    ''', label="torch.device(map_location) breaks a mapping or a function", words=('map_location',)),
    Answer('09.latest_checkpoint', 'ok', r'''
        def latest_checkpoint(folder):
            import re
            from pathlib import Path
            best = None
            for p in Path(folder).iterdir():
                m = re.fullmatch(r"epoch-(\d+)\.pt", p.name)
                if m and p.is_file() and (best is None or int(m.group(1)) > best[0]):
                    best = (int(m.group(1)), p)
            return best[1] if best else None
    ''', label="re.fullmatch over iterdir"),
    Answer('09.latest_checkpoint', 'ok', r'''
        def latest_checkpoint(folder):
            import re
            from pathlib import Path
            pattern = re.compile(r"^epoch-([0-9]+)\.pt$")
            found = [(int(m[1]), p) for p in Path(folder).glob("epoch-*.pt") if (m := pattern.match(p.name))]
            return max(found)[1] if found else None
    ''', label="glob + anchored regex + max of tuples"),
    Answer('09.latest_checkpoint', 'ok', r'''
        def latest_checkpoint(folder):
            import os
            from pathlib import Path
            folder = Path(folder)
            epochs = {}
            for name in os.listdir(folder):
                if name.startswith("epoch-") and name.endswith(".pt"):
                    number = name[len("epoch-"):-len(".pt")]
                    if number.isdigit():
                        epochs[int(number)] = folder / name
            if not epochs:
                return None
            return epochs[max(epochs)]
    ''', label="listdir, startswith/endswith, isdigit"),
    Answer('09.latest_checkpoint', 'ok', r'''
        def _epoch(path):
            stem = path.name.removeprefix("epoch-").removesuffix(".pt")
            return int(stem) if path.name.startswith("epoch-") and path.name.endswith(".pt") and stem.isdecimal() else None

        def latest_checkpoint(folder):
            """Path of the epoch-<n>.pt with the highest n, or None."""
            from pathlib import Path
            candidates = [p for p in Path(folder).iterdir() if p.is_file() and _epoch(p) is not None]
            return max(candidates, key=_epoch, default=None)
    ''', label="helper key function, max(default=None)", name='latest_checkpoint'),
    Answer('09.latest_checkpoint', 'ok', r'''
        def latest_checkpoint(folder):
            from pathlib import Path
            files = []
            for p in Path(folder).glob("epoch-*.pt"):
                try:
                    files.append((int(p.stem.split("-", 1)[1]), p))
                except ValueError:
                    continue
            files.sort()
            return files[-1][1].resolve() if files else None
    ''', label="int() in try/except, sort, resolve()"),
    Answer('09.latest_checkpoint', 'ok', r'''
        def latest_checkpoint(folder):
            import re, os
            from pathlib import Path
            names = [n for n in os.listdir(os.fspath(folder)) if re.fullmatch(r"epoch-\d+\.pt", n)]
            names.sort(key=lambda n: (len(n), n))
            return Path(folder) / names[-1] if names else None
    ''', label="natural sort by (len, name)"),
    Answer('09.latest_checkpoint', 'fail', r'''
        def latest_checkpoint(folder):
            import re, os
            from pathlib import Path
            files = sorted(Path(folder).glob("epoch-*.pt"))
            return files[-1] if files else None
    ''', label="sorted as text (epoch-9 after epoch-10)", words=('epoch-10',)),
    Answer('09.latest_checkpoint', 'fail', r'''
        def latest_checkpoint(folder):
            import re, os
            from pathlib import Path
            files = list(Path(folder).glob("epoch-*.pt"))
            return max(files, key=lambda p: p.stat().st_mtime) if files else None
    ''', label="newest modification time", words=('mtime',)),
    Answer('09.latest_checkpoint', 'fail', r'''
        def latest_checkpoint(folder):
            import re, os
            from pathlib import Path
            files = [p for p in Path(folder).glob("epoch-*.pt")]
            if not files:
                return None
            return max(files, key=lambda p: int(p.stem[6:])).name
    ''', label="returns the file name only", words=('Path',)),
    Answer('09.latest_checkpoint', 'fail', r'''
        def latest_checkpoint(folder):
            import re, os
            from pathlib import Path
            files = [p for p in Path(folder).glob("epoch-*.pt")]
            if not files:
                return None
            return str(max(files, key=lambda p: int(p.stem[6:])))
    ''', label="returns a str", words=('Path', )),
    Answer('09.latest_checkpoint', 'fail', r'''
        def latest_checkpoint(folder):
            import re, os
            from pathlib import Path
            best = None
            for name in os.listdir(folder):
                m = re.search(r"epoch-(\d+)\.pt", name)
                if m and (best is None or int(m.group(1)) > best[0]):
                    best = (int(m.group(1)), Path(folder) / name)
            return best[1] if best else None
    ''', label="unanchored regex accepts temp files", words=('temp',)),
    Answer('09.latest_checkpoint', 'fail', r'''
        def latest_checkpoint(folder):
            import re, os
            from pathlib import Path
            files = [p for p in Path(folder).iterdir() if p.name.startswith("epoch-")]
            if not files:
                return None
            return max(files, key=lambda p: int(p.name.split("-")[1].split(".")[0]))
    ''', label="startswith('epoch-') only: temp files with a higher epoch win", words=('found epoch-11.pt.tmp', )),
    Answer('09.latest_checkpoint', 'fail', r'''
        def latest_checkpoint(folder):
            import re, os
            from pathlib import Path
            files = list(Path(folder).glob("epoch-*.pt"))
            return max(files, key=lambda p: int(p.stem[6:]))
    ''', label="max() of an empty list raises", words=('None',)),
    Answer('09.latest_checkpoint', 'fail', r'''
        def latest_checkpoint(folder):
            import re, os
            from pathlib import Path
            files = list(Path(folder).glob("epoch-*.pt"))
            if not files:
                return None
            return min(files, key=lambda p: int(p.stem[6:]))
    ''', label="lowest epoch", words=('found epoch-1.pt', )),
    Answer('09.latest_checkpoint', 'fail', r'''
        def latest_checkpoint(folder):
            import re, os
            from pathlib import Path
            files = [f for f in os.listdir(folder + "/") if re.fullmatch(r"epoch-\d+\.pt", f)]
            if not files:
                return None
            return Path(folder) / max(files, key=lambda n: int(n[6:-3]))
    ''', label="folder + '/' (only works for str)", words=('Path',)),
    Answer('09.latest_checkpoint', 'fail', r'''
        def latest_checkpoint(folder):
            import re, os
            from pathlib import Path
            files = [p for p in Path(folder).rglob("epoch-*.pt") if re.fullmatch(r"epoch-\d+\.pt", p.name)]
            if not files:
                return None
            return max(files, key=lambda p: int(p.stem[6:]))
    ''', label="rglob also searches subfolders", words=('subfolder', )),
    Answer('09.latest_checkpoint', 'fail', r'''
        def latest_checkpoint(folder):
            import re, os
            from pathlib import Path
            files = list(Path(folder).iterdir())
            if not files:
                return None
            return max(files, key=lambda p: int(p.stem.split("-")[1]))
    ''', label="parses every file name (best.pt crashes)", words=('not an epoch', )),
    Answer('09.latest_checkpoint', 'fail', r'''
        def latest_checkpoint(folder):
            import re, os
            from pathlib import Path
            files = [p for p in Path(folder).glob("*.pt") if p.name != "best.pt"]
            if not files:
                return None
            return max(files, key=lambda p: int(re.sub(r"\D", "", p.stem) or -1))
    ''', label="every *.pt except best.pt, digits scraped from the name", words=('epoch-', )),
    Answer('09.latest_checkpoint', 'fail', r'''
        def latest_checkpoint(folder):
            import re, os
            from pathlib import Path
            files = list(Path(folder).glob("epoch-*.pt"))
            if not files:
                return Path(folder)
            return max(files, key=lambda p: int(p.stem[6:]))
    ''', label="returns the folder when there is no checkpoint", words=('None',)),
    Answer('09.latest_checkpoint', 'fail', r'''
        def latest_checkpoint(folder):
            import re, os
            from pathlib import Path
            files = [p for p in Path(folder).glob("epoch-*.pt") if p.stem[6:].isdigit()]
            if not files:
                return None
            return max(files, key=lambda p: len(p.name))
    ''', label="longest file name wins (ties between epoch-10 and epoch-12)", words=('found epoch-1.pt', )),
    Answer('09.latest_checkpoint', 'fail', r'''
        def latest_checkpoint(folder):
            import re, os
            from pathlib import Path
            files = sorted(Path(folder).glob("epoch-*.pt"), key=lambda p: int(p.stem[6:]))
            return files[-2] if len(files) > 1 else (files[0] if files else None)
    ''', label="takes the second newest (off by one)", words=('found epoch-2.pt', )),
    Answer('09.latest_checkpoint', 'fail', r'''
        def latest_checkpoint(folder):
            import re, os
            from pathlib import Path
            nums = [int(n[6:-3]) for n in os.listdir(folder) if re.fullmatch(r"epoch-\d+\.pt", n)]
            if not nums:
                return None
            return Path(f"epoch-{max(nums)}.pt")
    ''', label="rebuilds a relative path without the folder", words=('folder',)),
    Answer('09.clean_state_dict', 'ok', r'''
        def clean_state_dict(state_dict):
            cleaned = {}
            for key, value in state_dict.items():
                while key.startswith(("module.", "_orig_mod.")):
                    key = key.removeprefix("module.").removeprefix("_orig_mod.")
                cleaned[key] = value
            return cleaned
    ''', label="while loop with removeprefix"),
    Answer('09.clean_state_dict', 'ok', r'''
        def clean_state_dict(state_dict):
            import re
            prefix = re.compile(r"^(?:module\.|_orig_mod\.)+")
            return {prefix.sub("", k): v for k, v in state_dict.items()}
    ''', label="anchored regex, dict comprehension"),
    Answer('09.clean_state_dict', 'ok', r'''
        def _strip(key: str) -> str:
            for p in ("module.", "_orig_mod."):
                if key.startswith(p):
                    return _strip(key[len(p):])
            return key

        def clean_state_dict(state_dict):
            """A new dict whose keys have no leading wrapper prefixes."""
            return {_strip(k): v for k, v in state_dict.items()}
    ''', label="recursive helper", name='clean_state_dict'),
    Answer('09.clean_state_dict', 'ok', r'''
        def clean_state_dict(state_dict):
            from collections import OrderedDict
            out = OrderedDict()
            for k, v in state_dict.items():
                changed = True
                while changed:
                    changed = False
                    for p in ("_orig_mod.", "module."):
                        if k.startswith(p):
                            k = k[len(p):]
                            changed = True
                out[k] = v
            return out
    ''', label="OrderedDict, slicing"),
    Answer('09.clean_state_dict', 'ok', r'''
        def clean_state_dict(state_dict):
            import copy
            sd = copy.copy(dict(state_dict))
            keys = list(sd)
            result = {}
            for k in keys:
                new = k
                while True:
                    parts = new.split(".", 1)
                    if len(parts) == 2 and parts[0] in ("module", "_orig_mod"):
                        new = parts[1]
                    else:
                        break
                result[new] = sd[k]
            return result
    ''', label="split on the first dot"),
    Answer('09.clean_state_dict', 'ok', r'''
        def clean_state_dict(state_dict):
            new = {}
            for k in state_dict:
                s = k
                for _ in range(k.count(".") + 1):
                    s = s.removeprefix("_orig_mod.").removeprefix("module.")
                new[s] = state_dict[k]
            return new
    ''', label="bounded loop of removeprefix"),
    Answer('09.clean_state_dict', 'fail', r'''
        def clean_state_dict(state_dict):
            return {k.replace("module.", "").replace("_orig_mod.", ""): v for k, v in state_dict.items()}
    ''', label="str.replace also removes the words inside a key", words=('start',)),
    Answer('09.clean_state_dict', 'fail', r'''
        def clean_state_dict(state_dict):
            out = {}
            for k, v in state_dict.items():
                if k.startswith("module."):
                    k = k[len("module."):]
                elif k.startswith("_orig_mod."):
                    k = k[len("_orig_mod."):]
                out[k] = v
            return out
    ''', label="strips one prefix only (not stacked)", words=('one layer', )),
    Answer('09.clean_state_dict', 'fail', r'''
        def clean_state_dict(state_dict):
            return {k.removeprefix("module."): v for k, v in state_dict.items()}
    ''', label="strips module. only", words=('_orig_mod.',)),
    Answer('09.clean_state_dict', 'fail', r'''
        def clean_state_dict(state_dict):
            return {k.removeprefix("module.").removeprefix("_orig_mod."): v for k, v in state_dict.items()}
    ''', label="fixed order module. then _orig_mod. (fails on _orig_mod.module.)", words=('loop', )),
    Answer('09.clean_state_dict', 'fail', r'''
        def clean_state_dict(state_dict):
            from torch.nn.modules.utils import consume_prefix_in_state_dict_if_present
            consume_prefix_in_state_dict_if_present(state_dict, "module.")
            consume_prefix_in_state_dict_if_present(state_dict, "_orig_mod.")
            return state_dict
    ''', label="consume_prefix_in_state_dict_if_present edits the caller's dict", words=('in place',)),
    Answer('09.clean_state_dict', 'fail', r'''
        def clean_state_dict(state_dict):
            out = {}
            for k in sorted(state_dict):
                new = k
                while new.startswith(("module.", "_orig_mod.")):
                    new = new.removeprefix("module.").removeprefix("_orig_mod.")
                out[new] = state_dict[k]
            return out
    ''', label="sorts the keys (order changed)", words=("found ['encoder.bias'", )),
    Answer('09.clean_state_dict', 'fail', r'''
        def clean_state_dict(state_dict):
            return {k.lstrip("module.").lstrip("_orig_mod."): v for k, v in state_dict.items()}
    ''', label="str.lstrip strips characters, not a prefix", words=('lstrip', )),
    Answer('09.clean_state_dict', 'fail', r'''
        def clean_state_dict(state_dict):
            return {k.split(".", 1)[1]: v for k, v in state_dict.items()}
    ''', label="drops the first name of every key", words=("found ['weight'", )),
    Answer('09.clean_state_dict', 'fail', r'''
        def clean_state_dict(state_dict):
            out = {}
            for k, v in state_dict.items():
                while "module." in k or "_orig_mod." in k:
                    k = k[k.index(".") + 1:]
                out[k] = v
            return out
    ''', label="checks 'in' instead of startswith (cuts keys with the word inside)", words=("'encoder.bias', 'weight'", )),
    Answer('09.clean_state_dict', 'fail', r'''
        def clean_state_dict(state_dict):
            out = {}
            for k, v in state_dict.items():
                while k.startswith(("module", "_orig_mod")):
                    k = k.removeprefix("module").removeprefix("_orig_mod").lstrip(".")
                out[k] = v
            return out
    ''', label="prefixes without the dot (eats 'modules_list.' style names)", words=('module.', )),
    Answer('09.clean_state_dict', 'fail', r'''
        def clean_state_dict(state_dict):
            keys = list(state_dict)
            for prefix in ("module.", "_orig_mod."):
                if all(k.startswith(prefix) for k in keys):
                    keys = [k[len(prefix):] for k in keys]
            return dict(zip(keys, state_dict.values()))
    ''', label="strips a prefix only when every key has it", words=('loop', )),
    Answer('09.clean_state_dict', 'fail', r'''
        def clean_state_dict(state_dict):
            items = list(state_dict.items())
            state_dict.clear()
            for k, v in items:
                while k.startswith(("module.", "_orig_mod.")):
                    k = k.removeprefix("module.").removeprefix("_orig_mod.")
                state_dict[k] = v
            return state_dict
    ''', label="clears and refills the caller's dict", words=('in place',)),
    Answer('09.clean_state_dict', 'fail', r'''
        def clean_state_dict(state_dict):
            out = []
            for k, v in state_dict.items():
                while k.startswith(("module.", "_orig_mod.")):
                    k = k.removeprefix("module.").removeprefix("_orig_mod.")
                out.append((k, v))
            return out
    ''', label="returns a list of pairs", words=('dict',)),
    Answer('09.clean_state_dict', 'fail', r'''
        def clean_state_dict(state_dict):
            out = {}
            for k, v in state_dict.items():
                while k.startswith(("module.", "_orig_mod.")):
                    k = k.removeprefix("module.").removeprefix("_orig_mod.")
                out[k] = v.clone().float()
            return out
    ''', label="converts the values to float32", words=('values', )),
    Answer('09.clean_state_dict', 'fail', r'''
        def clean_state_dict(state_dict):
            out = {}
            for k, v in state_dict.items():
                if k.startswith("module._orig_mod."):
                    k = k[len("module._orig_mod."):]
                elif k.startswith(("module.", "_orig_mod.")):
                    k = k.split(".", 1)[1]
                out[k] = v
            return out
    ''', label="handles the stacked pair in one order only", words=('loop', )),
    Answer('09.clean_state_dict', 'fail', r'''
        def clean_state_dict(state_dict):
            out = {}
            for k, v in state_dict.items():
                if k[:7] == "module.":
                    k = k[7:]
                if k[:10] == "_orig_mod.":
                    k = k[9:]
                out[k] = v
            return out
    ''', label="off-by-one slice for _orig_mod. leaves the dot", words=("'.encoder.weight'", )),
]
