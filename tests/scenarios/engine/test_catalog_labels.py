"""The drill form's option labels read as whole phrases (a learner picks among them)."""

from scenarios.engine.catalog import FIXES, MEASUREMENTS

# words a phrase cannot end on: it was cut off mid-sentence
_DANGLING = {"stops", "so", "the", "a", "an", "to", "of", "and", "or", "with", "for", "that"}


def test_no_option_label_is_cut_off_mid_sentence():
    for label in [*FIXES.values(), *MEASUREMENTS.values()]:
        last = label.rstrip(")").split()[-1].lower()
        assert last not in _DANGLING, label
