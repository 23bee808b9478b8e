"""`capkit student`: the student versions of the notebooks and their answer key (`make student`);
with ``--nbgrader COURSE``, nbgrader's source folder instead (``capkit.course.grading``)."""
from __future__ import annotations

import argparse


def register(sub) -> None:
    p = sub.add_parser("student", help="write the notebooks' student versions (solutions "
                       "stripped by nbgrader) and the answer key")
    p.add_argument("--notebooks", default="notebooks", help="the instructors' notebooks")
    p.add_argument("--out", default="student", help="folder for the student notebooks")
    p.add_argument("--solutions", default=None,
                   help="folder for the answer key (default: NOTEBOOKS/solutions)")
    p.add_argument("--nbgrader", metavar="COURSE", default=None,
                   help="instead, write nbgrader's source folder: one assignment per notebook, "
                   "COURSE/source/NN_name/NN_name.ipynb, exercise and check cells marked for "
                   "autograding")
    p.add_argument("--only", nargs="+", metavar="NN", default=None,
                   help="with --nbgrader: only these notebooks (e.g. 00 09)")
    p.add_argument("--points", type=float, default=1.0,
                   help="with --nbgrader: points per exercise (default 1)")
    p.add_argument("--force", action="store_true",
                   help="overwrite student notebooks in --out that differ from the new ones "
                   "(a student's answers there are lost)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from capkit.commands.args import output_dir
    from capkit.course.student import build_student, write_answer_keys
    if args.nbgrader:
        return _nbgrader(args)
    out = output_dir(args.out)                          # both checked before any work
    solutions = output_dir(args.solutions or Path(args.notebooks) / "solutions", "--solutions")
    if solutions.resolve().is_relative_to(out.resolve()):
        given = f"--solutions {solutions}" if args.solutions else \
            f"the answer keys' folder {solutions} (NOTEBOOKS/solutions, the default)"
        raise ValueError(f"{given} is inside --out {out}: the answer keys would ship with the "
                         "student notebooks; give --solutions a folder outside --out")
    notebooks = build_student(args.notebooks, out, force=args.force)
    keys = write_answer_keys(args.notebooks, solutions)
    print(f"{len(notebooks)} student notebooks in {args.out}/ (solutions replaced by "
          f"NotImplementedError stubs, outputs cleared)")
    print(f"{len(keys)} answer keys: " + (", ".join(str(k) for k in keys) or "none"))
    plain = sorted({n.stem for n in notebooks} - {k.stem for k in keys})
    if plain:
        print(f"no solution region (### BEGIN SOLUTION) in {', '.join(plain)}: copied with "
              "their outputs cleared, nothing stubbed")
    return 0


def _nbgrader(args: argparse.Namespace) -> int:
    from capkit.commands.args import output_dir
    from capkit.course.grading import write_nbgrader_course
    if args.points <= 0:
        raise ValueError(f"--points {args.points:g}: give a positive number of points per exercise")
    course = output_dir(args.nbgrader, "--nbgrader")
    written = write_nbgrader_course(args.notebooks, course, points=args.points, only=args.only)
    print(f"{len(written)} assignments in {course}/source/ ({args.points:g} point(s) per "
          "exercise); then, in that folder: nbgrader generate_assignment NN_name")
    return 0
