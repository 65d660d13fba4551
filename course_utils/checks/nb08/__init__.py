"""Exercises of notebook 08 (checkpointing): save, load, find the latest, clean state_dict keys.

One module per exercise; importing this package registers all four ``08.*`` ids:

* :mod:`.save` -- ``08.save_checkpoint``
* :mod:`.load` -- ``08.load_checkpoint``
* :mod:`.latest` -- ``08.latest_checkpoint``
* :mod:`.clean` -- ``08.clean_state_dict``
* :mod:`._common` -- temp folders, the audit hook and the resume helpers the first two share

How the checkpoint checkers see what cannot be seen in a return value:

* a **resume test**: the candidate's checkpoint (or loader) is used to continue a real run
  (:mod:`course_utils.resume_demo`) and the final parameters must be ``torch.equal`` to an
  uninterrupted run's;
* **atomic writes**: a Python audit hook records every ``os.rename``/``os.replace`` into the
  case's folder; the checkpoint must arrive at its name by a rename from the same folder;
* **unsafe loads**: the same hook records ``pickle.find_class``, which only the full pickle
  machinery (``weights_only=False``) calls;
* ``load_checkpoint`` is re-run on fresh objects inside ``verify``, so the global RNG state it
  leaves behind is inspected before anything else touches it.
"""

from __future__ import annotations

from ._common import (
    N_SAMPLES, TOTAL_EPOCHS, _audit, _CANDIDATE, _case_dir, _CASE_INFO, _code_is, _FIND_CLASS,
    _fresh_run, _HOOKED, _install_hook, _LAST, _max_diff, _RENAMES, _ROOT, _same, _straight_params,
)
from .save import (
    save_checkpoint_reference, _NEEDED, _save_case, _save_problem, _save_variant, _save_verify,
)
from .load import (
    load_checkpoint_reference, _load_case, _load_problem, _load_variant, _load_verify,
    _remember_candidate,
)
from .latest import (
    latest_checkpoint_reference, _EPOCH_FILE, _latest_any_file, _latest_case, _latest_mtime,
    _latest_text_sort, _latest_verify,
)
from .clean import (
    clean_state_dict_reference, _Block, _clean_case, _clean_in_place, _clean_module_only,
    _clean_once, _clean_replace, _clean_verify, _PREFIXES,
)
