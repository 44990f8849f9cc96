"""ids.py: hand-written cases for every accepted form, and hypothesis properties."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inspire_build import ids
from inspire_build.errors import InvalidIdError
from inspire_build.ids import PaperId, Scheme, parse_any_id


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("https://arxiv.org/abs/2310.00826v2", "arxiv:2310.00826"),
        ("http://arxiv.org/pdf/2310.00826v1.pdf", "arxiv:2310.00826"),
        ("arxiv.org/pdf/2310.00826", "arxiv:2310.00826"),
        ("https://export.arxiv.org/abs/2310.00826", "arxiv:2310.00826"),
        ("arXiv:2310.00826", "arxiv:2310.00826"),
        ("2310.00826", "arxiv:2310.00826"),
        ("0704.0001", "arxiv:0704.0001"),
        ("1412.6980v9", "arxiv:1412.6980"),
        ("hep-th/9901001", "arxiv:hep-th/9901001"),
        ("math.GT/0309136v2", "arxiv:math/0309136"),
        ("arXiv:cond-mat/0102536", "arxiv:cond-mat/0102536"),
        ("https://arxiv.org/abs/hep-th/9901001v3", "arxiv:hep-th/9901001"),
        ("10.48550/arXiv.2310.00826", "arxiv:2310.00826"),
        ("https://doi.org/10.48550/ARXIV.2310.00826", "arxiv:2310.00826"),
        ("https://doi.org/10.1145/3383583.3398584", "doi:10.1145/3383583.3398584"),
        ("http://dx.doi.org/10.1038/NATURE14539", "doi:10.1038/nature14539"),
        ("doi:10.1000/ABC(1)x", "doi:10.1000/abc(1)x"),
        ("https://doi.org/10.1002%2F0470841559.ch1", "doi:10.1002/0470841559.ch1"),
        ("10.18653/v1/N19-1423", "doi:10.18653/v1/n19-1423"),
        ("W4385245566", "openalex:W4385245566"),
        ("w4385245566", "openalex:W4385245566"),
        ("https://openalex.org/W4385245566", "openalex:W4385245566"),
        ("https://api.openalex.org/works/W2741809807", "openalex:W2741809807"),
        ("openalex:W1", "openalex:W1"),
        ("CorpusId:49313245", "corpusid:49313245"),
        ("CorpusID:049313245", "corpusid:49313245"),
        ("corpusid:49313245", "corpusid:49313245"),
        ("204e3073870fae3d05bcbc2f6a8e263d9b72e776", "s2:204e3073870fae3d05bcbc2f6a8e263d9b72e776"),
        (
            "S2:204E3073870FAE3D05BCBC2F6A8E263D9B72E776",
            "s2:204e3073870fae3d05bcbc2f6a8e263d9b72e776",
        ),
        (
            "https://www.semanticscholar.org/paper/Attention-is-All-you-Need-Vaswani/"
            "204e3073870fae3d05bcbc2f6a8e263d9b72e776",
            "s2:204e3073870fae3d05bcbc2f6a8e263d9b72e776",
        ),
        ("  W42  ", "openalex:W42"),
    ],
)
def test_parse_any_id_accepts_every_documented_form(text: str, expected: str) -> None:
    assert str(parse_any_id(text)) == expected


@pytest.mark.parametrize(
    "junk",
    [
        "",
        "   ",
        "junk",
        "49313245",  # a bare number is ambiguous
        "1234.5678",  # month 34
        "1501.0001",  # 2015 onward needs five digits
        "1412.00001",  # before 2015, four digits
        "0703.0001",  # new style starts 2007-04
        "hep-th/0801001",  # old style ended 2007-03
        "10.1/abc",  # registrant too short
        "W0",
        "W12x",
        "204e3073870fae3d05bcbc2f6a8e263d9b72e77",  # 39 hex digits
        "CorpusId:",
        "https://example.org/W123",
    ],
)
def test_parse_any_id_refuses_junk_with_the_input_in_the_message(junk: str) -> None:
    with pytest.raises(InvalidIdError) as raised:
        parse_any_id(junk)
    if junk.strip():
        assert repr(junk) in str(raised.value)


def test_arxiv_version_is_kept_on_request() -> None:
    assert ids.split_arxiv_version("arXiv:2310.00826v12") == ("2310.00826", 12)
    assert ids.split_arxiv_version("hep-th/9901001") == ("hep-th/9901001", None)


def test_arxiv_datacite_doi_maps_both_ways() -> None:
    assert ids.arxiv_to_doi("arXiv:2310.00826v2") == "10.48550/arxiv.2310.00826"
    assert ids.doi_to_arxiv("10.48550/arXiv.2310.00826") == "2310.00826"
    assert ids.doi_to_arxiv("https://doi.org/10.48550/arxiv.hep-th/9901001") == "hep-th/9901001"
    assert ids.doi_to_arxiv("10.1145/3383583.3398584") is None


# --- properties -------------------------------------------------------------------------------


@st.composite
def arxiv_new(draw: st.DrawFn) -> str:
    year = draw(st.integers(7, 26))
    month = draw(st.integers(4 if year == 7 else 1, 12))
    digits = 5 if year >= 15 else 4
    number = draw(st.integers(1, 10**digits - 1))
    return f"{year:02d}{month:02d}.{number:0{digits}d}"


@st.composite
def arxiv_old(draw: st.DrawFn) -> str:
    archive = draw(st.sampled_from(["hep-th", "hep-ph", "astro-ph", "cond-mat", "math", "cs"]))
    year, month = draw(
        st.sampled_from(
            [(y, m) for y in [*range(91, 100), *range(0, 8)] for m in range(1, 13)]
        ).filter(lambda ym: ym[0] >= 91 or ym <= (7, 3))
    )
    return f"{archive}/{year:02d}{month:02d}{draw(st.integers(1, 999)):03d}"


dois = st.builds(
    lambda registrant, suffix: f"10.{registrant}/{suffix}",
    st.integers(1000, 999999999),
    # '%' is left out: in the URL form it is a percent-escape, which normalize_doi decodes.
    st.text(
        st.characters(min_codepoint=33, max_codepoint=126, exclude_characters="%"),
        min_size=1,
        max_size=30,
    ),
).filter(lambda doi: not doi.lower().startswith(ids.ARXIV_DOI_PREFIX))

canonical_ids = st.one_of(
    arxiv_new().map(lambda v: PaperId(Scheme.ARXIV, v)),
    arxiv_old().map(lambda v: PaperId(Scheme.ARXIV, v)),
    dois.map(lambda v: PaperId(Scheme.DOI, v.lower())),
    st.integers(1, 10**12).map(lambda n: PaperId(Scheme.OPENALEX, f"W{n}")),
    st.text("0123456789abcdef", min_size=40, max_size=40).map(lambda v: PaperId(Scheme.S2, v)),
    st.integers(0, 10**10).map(lambda n: PaperId(Scheme.CORPUS_ID, str(n))),
)


@given(canonical_ids)
def test_formatting_then_parsing_round_trips(paper_id: PaperId) -> None:
    assert parse_any_id(str(paper_id)) == paper_id


@given(canonical_ids)
def test_normalising_is_idempotent(paper_id: PaperId) -> None:
    once = parse_any_id(str(paper_id))
    assert parse_any_id(str(once)) == once
    if once.scheme is not Scheme.CORPUS_ID:  # a bare number is refused by design
        assert parse_any_id(once.value) == once


@given(arxiv_new(), st.integers(1, 30))
def test_every_arxiv_dressing_gives_the_same_id(arxiv_id: str, version: int) -> None:
    forms = [
        arxiv_id,
        f"arXiv:{arxiv_id}v{version}",
        f"https://arxiv.org/abs/{arxiv_id}v{version}",
        f"https://arxiv.org/pdf/{arxiv_id}v{version}.pdf",
        f"10.48550/arXiv.{arxiv_id}",
        f"https://doi.org/10.48550/arXiv.{arxiv_id}",
    ]
    assert {parse_any_id(form) for form in forms} == {PaperId(Scheme.ARXIV, arxiv_id)}


@given(dois)
def test_doi_is_case_folded_and_prefix_free(doi: str) -> None:
    for form in (doi.upper(), f"doi:{doi}", f"https://doi.org/{doi}"):
        assert ids.normalize_doi(form) == doi.lower()


@given(st.text(max_size=60))
def test_parse_any_id_either_parses_or_raises_invalid_id(text: str) -> None:
    try:
        parsed = parse_any_id(text)
    except InvalidIdError:
        return
    assert parse_any_id(str(parsed)) == parsed


def test_a_refused_id_is_echoed_at_most_200_characters() -> None:
    with pytest.raises(InvalidIdError) as caught:
        parse_any_id("x" * 100_000)
    said = str(caught.value)
    assert len(said) < 400 and "... (100,000 characters)" in said
