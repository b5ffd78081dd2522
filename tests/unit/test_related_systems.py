"""What the app's own text says about the systems it compares OPT-Tree with matches what it implements."""

from viz import lessons


def test_token_recycling_template_is_named_as_this_projects_own():
    """`tr-static` is the project's template (trees/static.py: the 80 rank paths with the largest product of
    TR_RANK_PRIOR), not the paper's tree: the lesson and the Learn text say so rather than credit the paper."""
    caption = lessons.TEXTS["token-recycling"]["lesson"]
    section = dict(lessons.learn_sections())["Drafting without a trained draft"]
    for text in (" ".join(caption.split()), " ".join(section.split())):
        assert "this project's" in text and "Token Recycling's static template" not in text, text
