"""The course lab's machinery: exercise checks for the notebooks and the student versions.

`check` / `check_value` are what a notebook's check cell calls after an exercise: they compare the
student's answer with the library and print one line ("correct", "not done yet", or the first
case that differs), never raising, so a student's Run All goes on past an unfinished exercise.
`build_student` writes the solution-free notebooks and the answer key (`make student`), with
nbgrader's own `ClearSolutions` preprocessor: the notebooks are the one source.
`capkit.course.grading` writes them as nbgrader assignments, each check cell an autograder test
(`capkit student --nbgrader COURSE`).
"""
from capkit.course.exercises import Check, check, check_value

__all__ = ["Check", "check", "check_value"]
