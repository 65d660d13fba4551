"""The small project of notebook 14 (capstone): a typed configuration filled from the command line
(:mod:`.config`) and a training script that logs, checkpoints, resumes and serves (:mod:`.train`).

Run it as ``python -m course_utils.capstone.train --epochs 2 --out runs/first``.
"""
