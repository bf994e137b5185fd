"""The "roles" and "roles-wide" augmentations: subject/object role swaps of simple sentences with two people or animals."""

from __future__ import annotations

import pytest

from attnviz.core.data import heldout as H
from attnviz.core.data.augment import (
    WIDE_ROLE_WORDS,
    augment_as,
    augment_dataset,
    parse_kinds,
    role_frame,
    role_pairs,
    role_pool,
    role_swap,
    third_person,
    wide_role_pairs,
    wide_role_pool,
    with_cedict_tokens,
)
from attnviz.core.data.cedict_words import cedict_tokens
from attnviz.core.data.corpora import MIX_KIND, DataError, DataReport, Dataset, Pair
from attnviz.core.data.sources import load_data
from attnviz.core.data.tatoeba import exclusion_reason, held_out_for, held_out_sources


def _pair(src: str, tgt: str, tokens: list[tuple[str, str]], pid: str = "p") -> Pair:
    return Pair(src, tgt, pid, {"tokens": [{"word": w, "gloss_en": g} for w, g in tokens]})


def _texts(pairs: list[Pair]) -> set[tuple[str, str]]:
    return {(p.src, p.tgt) for p in pairs}


# Frames: two people or animals, one in each role.
HELPS = _pair("老师帮助学生。", "The teacher helps the student.", [("老师", "teacher"), ("帮助", "to help"), ("学生", "student; schoolchild")], "r1")
CHASES = _pair("猫追狗。", "The cat chases the dog.", [("猫", "cat"), ("追", "to chase"), ("狗", "dog")], "r2")
TRUST = _pair("我完全信任他。", "I trust him completely.", [("我", "I; me; my"), ("完全", "complete; whole"), ("信任", "to trust"), ("他", "he")], "r3")
BOOKED = _pair("他预约了医生。", "He booked a doctor.", [("他", "he"), ("预约", "to book"), ("了", "(completed action marker)"), ("医生", "doctor")], "r4")
MANY = _pair("学生帮助老师。", "The students help the teacher.", [("学生", "student"), ("帮助", "to help"), ("老师", "teacher")], "r5")
# Where the people and animals of the pool come from (no frames: one role each, and the copula).
IS_STUDENT = _pair("我是学生。", "I am a student.", [("我", "I; me; my"), ("是", "to be"), ("学生", "student")], "n1")
IS_TEACHER = _pair("他是老师。", "He is a teacher.", [("他", "he"), ("是", "to be"), ("老师", "teacher")], "n2")
IS_ENGINEER = _pair("她是工程师。", "She is an engineer.", [("她", "she"), ("是", "to be"), ("工程师", "engineer")], "n3")


def test_a_simple_sentence_swaps_its_roles_on_both_sides():
    for pair, expected in [
        (HELPS, ("学生帮助老师。", "The student helps the teacher.")),
        (CHASES, ("狗追猫。", "The dog chases the cat.")),
    ]:
        new = role_swap(role_frame(pair))
        assert (new.src, new.tgt) == expected
        assert new.extra["augmented"] == "roles" and new.extra["from"] == pair.id
    new = role_swap(role_frame(HELPS))
    assert [t["word"] for t in new.extra["tokens"]] == ["学生", "帮助", "老师"]  # the glosses follow their words
    assert new.extra["tokens"][0]["gloss_en"] == "student; schoolchild"


def test_role_pairs_make_the_swap_once_each_with_an_id():
    made = role_pairs([HELPS, CHASES], per_pair=1, seed=0)
    assert _texts(made) == {("学生帮助老师。", "The student helps the teacher."), ("狗追猫。", "The dog chases the cat.")}
    assert {p.id for p in made} == {"r1+role0", "r2+role0"}


def test_pronoun_frames_take_people_from_the_pool_in_both_orders():
    made = role_pairs([TRUST, IS_STUDENT, IS_TEACHER], per_pair=1, seed=0)
    assert _texts(made) == {
        ("老师完全信任学生。", "The teacher trusts the student completely."),
        ("学生完全信任老师。", "The student trusts the teacher completely."),
    }
    assert made[0].extra["tokens"][2] == {"word": "信任", "gloss_en": "to trust"}


def test_an_object_keeps_its_article():
    made = role_pairs([BOOKED, IS_TEACHER, IS_ENGINEER], per_pair=1, seed=0)
    assert _texts(made) == {("工程师预约了老师。", "The engineer booked a teacher."), ("老师预约了工程师。", "The teacher booked an engineer.")}


def test_a_change_of_number_is_made_to_agree_or_left_out():
    assert role_frame(MANY).subject.person == "other" and role_swap(role_frame(MANY)) is None  # "The teacher help the students."
    made = role_pairs([MANY, IS_ENGINEER, _pair("这是医生。", "This is a doctor.", [("这", "this"), ("是", "to be"), ("医生", "doctor")])], per_pair=1, seed=0)
    assert _texts(made) == {("工程师帮助医生。", "The engineer helps the doctor."), ("医生帮助工程师。", "The doctor helps the engineer.")}


@pytest.mark.parametrize(("middle", "person", "verbs", "expected"), [
    (" trust ", "other", {"trust"}, " trusts "),
    (" have never seen ", "other", set(), " has never seen "),
    (" often watch ", "other", {"watch"}, " often watches "),
    (" saw ", "other", set(), " saw "),
    (" helped ", "other", set(), " helped "),
    (" know ", "other", set(), None),  # no gloss says "know" is a verb here: unsure
    (" helps ", "third", set(), " helps "),
    (" are ", "third", set(), None),  # a noun taken for singular that is not
])
def test_third_person(middle, person, verbs, expected):
    assert third_person(middle, person, verbs) == expected


@pytest.mark.parametrize("pair", [
    _pair("老师很忙。", "The teacher is very busy.", [("老师", "teacher"), ("很", "very"), ("忙", "busy")]),  # one role
    _pair("他是老师。", "He is a teacher.", [("他", "he"), ("是", "to be"), ("老师", "teacher")]),  # the copula
    _pair("学生帮助学生。", "The student helps the student.", [("学生", "student"), ("帮助", "to help"), ("学生", "student")]),
    _pair("老师让学生帮助医生。", "The teacher asks the student to help the doctor.",
          [("老师", "teacher"), ("让", "to let"), ("学生", "student"), ("帮助", "to help"), ("医生", "doctor")]),  # three
    _pair("我希望你成功。", "I hope you succeed.", [("我", "I"), ("希望", "to hope"), ("你", "you"), ("成功", "to succeed")]),
    _pair("他爱他的狗。", "He loves his dog.", [("他", "he"), ("爱", "to love"), ("他", "he"), ("的", "of"), ("狗", "dog")]),
    _pair("你认识他吗？", "Do you know him?", [("你", "you"), ("认识", "to know"), ("他", "he"), ("吗", "(question)")]),
    _pair("我们都喜欢他。", "We all like him.", [("我们", "we"), ("都", "all"), ("喜欢", "to like"), ("他", "he")]),
])
def test_what_is_no_simple_two_role_sentence_gives_nothing(pair):
    assert role_frame(pair) is None
    assert role_pairs([pair, IS_STUDENT, IS_TEACHER, IS_ENGINEER], per_pair=3, seed=0) == []


def test_a_pronoun_sentence_is_never_swapped_itself():
    love = _pair("我爱他。", "I love him.", [("我", "I"), ("爱", "to love"), ("他", "he")])
    assert role_frame(love) is not None and role_swap(role_frame(love)) is None  # no "He loves me."
    assert role_pairs([love], per_pair=3, seed=0) == []  # and no one to put in its place
    made = role_pairs([love, IS_STUDENT, IS_TEACHER, IS_ENGINEER], per_pair=3, seed=0)
    assert made and not any(w in p.src for p in made for w in "我你他她")
    assert all(p.tgt.startswith("The ") and " loves the " in p.tgt for p in made)


# A frame that makes 猫吃鱼。 and 鱼吃猫。 from a pool of cats, fish and dogs, and one edit from them.
EATS = _pair("我吃他。", "I eat him.", [("我", "I"), ("吃", "to eat"), ("他", "he")], "e1")
ANIMALS = [_pair(f"这是{zh}。", f"This is a {en}.", [("这", "this"), ("是", "to be"), (zh, en)], f"a{i}")
           for i, (zh, en) in enumerate([("猫", "cat"), ("鱼", "fish"), ("狗", "dog")])]


def _near_word_order(src: str) -> bool:
    return H.NearSet(H.normalise(s) for s in H.word_order_sources()).near(H.normalise(src))


def test_the_word_order_sentences_and_their_neighbours_are_never_made():
    unchecked = role_pairs([EATS, *ANIMALS], per_pair=3, seed=0)
    assert {"猫吃鱼。", "鱼吃猫。"} <= {p.src for p in unchecked}  # what the exclusion has to stop
    data = Dataset("toy", [EATS, *ANIMALS], [], [], DataReport("toy"), spec={"kind": "toy"})
    assert role_pairs([EATS, *ANIMALS], per_pair=3, seed=0, held_out=held_out_sources(data)) == []  # all within one edit
    out = augment_dataset(data, ("roles",), seed=0, per_pair=3)
    assert out.train == data.train and out.spec["augment"]["added"] == {"roles": 0}


def test_role_swaps_go_through_the_held_out_exclusion():
    frames = [HELPS, CHASES, _pair("猫追鸟。", "The cat chases the bird.", [("猫", "cat"), ("追", "to chase"), ("鸟", "bird")], "r6")]
    data = Dataset("toy", frames, [], [], DataReport("toy"), spec={"kind": "toy"})
    made = [p for p in augment_dataset(data, ("roles",), seed=0, per_pair=1).train if p.extra.get("augmented") == "roles"]
    assert {p.src for p in made} == {"学生帮助老师。", "狗追猫。", "鸟追猫。"}
    held = Dataset("toy", frames, [Pair("狗追猫！", "The dog chases the cat!", "v")], [], DataReport("toy"), spec={"kind": "toy"})
    made = [p for p in augment_dataset(held, ("roles",), seed=0, per_pair=1).train if p.extra.get("augmented") == "roles"]
    assert {p.src for p in made} == {"学生帮助老师。"}  # 狗追猫 is held out; 鸟追猫 is one edit from it


def test_roles_are_deterministic_for_a_seed_and_honour_per_pair():
    pairs = [TRUST, BOOKED, IS_STUDENT, IS_TEACHER, IS_ENGINEER, *ANIMALS[2:]]
    made = role_pairs(pairs, per_pair=2, seed=5)
    assert made == role_pairs(pairs, per_pair=2, seed=5) and [p.extra for p in made] == [p.extra for p in role_pairs(pairs, per_pair=2, seed=5)]
    for per_pair in (1, 2):
        counts = [sum(p.extra["from"] == f.id for p in role_pairs(pairs, per_pair=per_pair, seed=5)) for f in (TRUST, BOOKED)]
        assert all(0 < n <= 2 * per_pair for n in counts)
    assert len(role_pairs(pairs, per_pair=2, seed=5)) > len(role_pairs(pairs, per_pair=1, seed=5))


def test_the_pool_holds_count_nouns_that_name_people_or_animals():
    coffee = _pair("医生喝咖啡。", "The doctor drinks coffee.", [("医生", "doctor"), ("喝", "to drink"), ("咖啡", "coffee")])
    apple = _pair("我想吃苹果。", "I want to eat an apple.", [("我", "I"), ("想", "to want"), ("吃", "to eat"), ("苹果", "apple")])
    assert [s.word for s in role_pool([IS_TEACHER, coffee, apple, *ANIMALS[:1]])] == ["猫", "老师"]  # no doctor: never counted


def test_adding_roles_leaves_the_other_kinds_as_they_were():
    data = Dataset("toy", [HELPS, TRUST, BOOKED, IS_STUDENT, IS_TEACHER, IS_ENGINEER], [], [], DataReport("toy"), spec={"kind": "toy"})
    without = augment_dataset(data, ("cedict", "substitution"), seed=2, per_pair=3)
    with_roles = augment_dataset(data, ("cedict", "substitution", "roles"), seed=2, per_pair=3)
    for kind in ("cedict", "substitution"):
        assert [p for p in with_roles.train if p.extra.get("augmented") == kind] == [p for p in without.train if p.extra.get("augmented") == kind]
    assert with_roles.train[: len(without.train)] == without.train
    roles = with_roles.spec["augment"]["added"]["roles"]
    assert roles > 0 and len(with_roles.train) == len(without.train) + roles


def test_the_kind_is_parsed_and_replayed_from_its_spec():
    assert parse_kinds("cedict,substitution,roles") == ("cedict", "substitution", "roles")
    data = Dataset("toy", [HELPS, TRUST, IS_STUDENT, IS_TEACHER, IS_ENGINEER], [], [], DataReport("toy"), spec={"kind": "toy"})
    out = augment_dataset(data, ("roles",), seed=4, per_pair=2)
    assert out.spec["augment"]["added"]["roles"] == len(out.train) - len(data.train) > 0
    assert augment_as(data, out.spec).train_hash == out.train_hash


@pytest.mark.slow  # loads and augments the HSK data (~15 s)
def test_on_the_hsk_data():
    data = load_data("hsk-zh-en")
    base = augment_dataset(data, ("cedict", "substitution"), seed=0, per_pair=4)
    out = augment_dataset(data, ("cedict", "substitution", "roles"), seed=0, per_pair=4)
    assert out.train[: len(base.train)] == base.train  # the runs' training data stays reproducible
    made = out.train[len(base.train) :]
    assert len(made) == out.spec["augment"]["added"]["roles"] >= 300
    assert all(p.extra["augmented"] == "roles" and not _near_word_order(p.src) for p in made)
    held = {H.normalise(p.src) for p in data.valid + data.test}
    assert not any(H.normalise(p.src) in held for p in made)
    assert all(p.tgt[:1].isupper() and p.tgt[-1] in ".!" and p.src[-1] in "。！" for p in made)


# -- "roles-wide": frames from every pair, words and glosses from CC-CEDICT ----------------------
def _plain(src: str, tgt: str, pid: str = "w", corpus: str | None = None) -> Pair:
    """A pair as the Tatoeba ones come: no word tokens."""
    return Pair(src, tgt, pid, {"corpus": corpus} if corpus else {})


def _seen(zh_en: list[tuple[str, str]], times: int = 1) -> list[Pair]:
    """"这是猫。 / This is a cat." for each noun, ``times`` over: where the people and animals come from."""
    return [_plain(f"这是{zh}。", f"This is a {en}.", f"n{i}.{k}") for k in range(times) for i, (zh, en) in enumerate(zh_en)]


PEOPLE = _seen([("老师", "teacher"), ("学生", "student")])
PETS = _seen([("猫", "cat"), ("狗", "dog")])


def test_cedict_tokens_are_words_glossed_as_the_hsk_ones():
    tokens = cedict_tokens("他不喜欢吃鱼。")
    assert [t["word"] for t in tokens] == ["他", "不", "喜欢", "吃", "鱼"]  # punctuation left out, as in HSK
    assert tokens[1]["gloss_en"] == "no; not so; (bound form) not; un-"  # the HSK token's very gloss
    assert tokens[3]["gloss_en"].startswith("to eat; to consume") and tokens[4]["gloss_en"].startswith("fish")
    assert with_cedict_tokens(HELPS) is HELPS  # HSK tokens are kept


@pytest.mark.parametrize(("frame", "pool", "expected"), [
    (_plain("我完全信任他。", "I trust him completely."), PEOPLE,
     {("老师完全信任学生。", "The teacher trusts the student completely."), ("学生完全信任老师。", "The student trusts the teacher completely.")}),
    (_plain("他不喜欢吃鱼。", "He doesn't like to eat fish."), PETS,
     {("猫不喜欢吃狗。", "The cat doesn't like to eat the dog."), ("狗不喜欢吃猫。", "The dog doesn't like to eat the cat.")}),
    (_plain("我们帮助他们。", "We help them."), PETS, {("猫帮助狗。", "The cat helps the dog."), ("狗帮助猫。", "The dog helps the cat.")}),
    (_plain("我们给了母亲一支手表。", "We gave our mother a watch."), PEOPLE,  # no "our teacher": 母亲 has no 我们的
     {("学生给了老师一支手表。", "The student gave the teacher a watch."), ("老师给了学生一支手表。", "The teacher gave the student a watch.")}),
])
def test_roles_wide_makes_frames_of_pairs_without_tokens_and_its_english_agrees(frame, pool, expected):
    assert role_frame(with_cedict_tokens(frame), WIDE_ROLE_WORDS) is not None
    made = wide_role_pairs([frame, *pool], per_pair=1, seed=0, min_seen=1)
    assert _texts(made) == expected
    assert all(p.extra["augmented"] == "roles-wide" and p.extra["from"] == frame.id and p.id.startswith(frame.id + "+role") for p in made)
    assert all("".join(t["word"] for t in p.extra["tokens"]) == p.src[:-1] for p in made)  # still aligned word by word


def test_roles_wide_swaps_a_sentence_with_two_nouns_itself():
    made = wide_role_pairs([_plain("老师帮助学生。", "The teacher helps the student.")], per_pair=1, seed=0)
    assert _texts(made) == {("学生帮助老师。", "The student helps the teacher.")}


@pytest.mark.parametrize(("src", "tgt", "narrow"), [
    ("我答应汤姆会与他吃饭。", "I promised Tom I'd eat with him.", True),  # "I'd" is the subject's
    ("我可以在她眼中看到。", "I can see it in her eyes.", True),  # "her" is a possessive
    ("他认为我们当中有一个奸细。", "He believes that there is a spy among us.", True),  # "among the dog"
    ("他有三个女儿。", "He has three daughters.", False),  # "three the dog"
    ("我完全不是科学家。", "I am not a scientist at all.", False),  # the copula: no roles
    ("我希望成为一名歌手。", "I hope to become a singer.", False),  # what the subject becomes
])
def test_roles_wide_frames_pass_stricter_checks(src, tgt, narrow):
    pair = with_cedict_tokens(_plain(src, tgt))
    assert role_frame(pair, WIDE_ROLE_WORDS) is None
    assert (role_frame(pair) is not None) == narrow  # what the "roles" rules, kept as they were, would take
    assert wide_role_pairs([_plain(src, tgt), *PEOPLE, *PETS], per_pair=3, seed=0, min_seen=1) == []


def test_the_wide_pool_takes_what_is_seen_often_enough_and_counted():
    pairs = [*_seen([("猫", "cat")], 3), *_seen([("狗", "dog")], 2), _plain("警察来了。", "The police came.")]
    assert [s.word for s in wide_role_pool(pairs)] == ["猫"]  # the dog twice only; the police never counted
    assert [s.word for s in wide_role_pool(pairs, min_seen=2)] == ["猫", "狗"]


EATS_PLAIN = _plain("我吃他。", "I eat him.", "e1")
ANIMALS_PLAIN = _seen([("猫", "cat"), ("鱼", "fish"), ("狗", "dog")], 3)


def test_roles_wide_never_makes_the_word_order_sentences_or_their_neighbours():
    unchecked = wide_role_pairs([EATS_PLAIN, *ANIMALS_PLAIN], per_pair=3, seed=0)
    assert {"猫吃鱼。", "鱼吃猫。"} <= {p.src for p in unchecked}  # what the exclusion has to stop
    data = Dataset("toy", [EATS_PLAIN, *ANIMALS_PLAIN], [], [], DataReport("toy"), spec={"kind": "toy"})
    assert wide_role_pairs([EATS_PLAIN, *ANIMALS_PLAIN], per_pair=3, seed=0, held_out=held_out_sources(data)) == []
    out = augment_dataset(data, ("roles-wide",), seed=0, per_pair=3)
    assert out.train == data.train and out.spec["augment"]["added"] == {"roles-wide": 0}


def test_roles_wide_keeps_one_edit_away_from_every_held_out_source():
    frames = [_plain("老师帮助学生。", "The teacher helps the student.", "h1"), _plain("老师帮助医生。", "The teacher helps the doctor.", "h2")]
    data = Dataset("toy", frames, [], [], DataReport("toy"), spec={"kind": "toy"})
    assert {p.src for p in augment_dataset(data, ("roles-wide",)).train[2:]} == {"学生帮助老师。", "医生帮助老师。"}
    # A Tatoeba valid source in the mix: the mix's own held-out sets know only its HSK sources.
    held = Pair("学生帮助老师！", "The student helps the teacher!", "v", {"corpus": "tatoeba-zh-en"})
    mix = Dataset("mix", frames, [held], [], DataReport("mix"), spec={"kind": MIX_KIND})
    out = augment_dataset(mix, ("roles-wide",))
    assert out.train == mix.train  # 学生帮助老师 is held out, 医生帮助老师 one edit from it
    assert exclusion_reason("医生帮助老师。", held_out_for(mix)) is None  # what "roles" would have let through


def test_roles_wide_is_recorded_and_replayed_and_needs_no_hsk_glosses():
    data = Dataset("toy", [_plain("我完全信任他。", "I trust him completely."), *_seen([("老师", "teacher"), ("学生", "student"), ("医生", "doctor")], 3)],
                   [], [], DataReport("toy"), spec={"kind": "toy"})
    assert parse_kinds("roles,roles-wide") == ("roles", "roles-wide")
    out = augment_dataset(data, ("roles-wide",), seed=4, per_pair=2)
    augment = out.spec["augment"]
    assert augment["kinds"] == ["roles-wide"] and augment["added"]["roles-wide"] == len(out.train) - len(data.train) > 0
    assert augment["dictionary"].startswith("CC-CEDICT") and "CC-CEDICT" in out.attribution
    assert augment_as(data, out.spec).train_hash == out.train_hash
    assert augment_as(data, out.spec).train == out.train
    assert out.train == augment_dataset(data, ("roles-wide",), seed=4, per_pair=2).train  # deterministic for a seed
    with pytest.raises(DataError, match="word glosses"):
        augment_dataset(data, ("roles",))  # the other kinds still need HSK glosses


def test_roles_wide_adds_nothing_that_roles_already_made():
    data = Dataset("toy", [HELPS, TRUST, IS_STUDENT, IS_TEACHER, IS_ENGINEER], [], [], DataReport("toy"), spec={"kind": "toy"})
    both = augment_dataset(data, ("roles", "roles-wide"), seed=1, per_pair=2)
    roles = augment_dataset(data, ("roles",), seed=1, per_pair=2)
    assert both.train[: len(roles.train)] == roles.train  # "roles" as it was
    srcs = [p.src for p in both.train]
    assert len(srcs) == len(set(srcs))


# "roles" as it was before "roles-wide" came: what the shipped bundles' meta.json replays
# (made by the code of commit 64e5acb on these very pairs).
ROLES_BEFORE = [
    ("工程师帮助鱼。", "The engineer helps the fish.", "r1+role0"), ("鱼帮助工程师。", "The fish helps the engineer.", "r1+role1"),
    ("狗追猫。", "The dog chases the cat.", "r2+role0"), ("老师追学生。", "The teacher chases the student.", "r2+role1"),
    ("工程师完全信任狗。", "The engineer trusts the dog completely.", "r3+role0"), ("狗完全信任工程师。", "The dog trusts the engineer completely.", "r3+role1"),
    ("学生预约了狗。", "The student booked a dog.", "r4+role0"), ("狗预约了学生。", "The dog booked a student.", "r4+role1"),
    ("狗帮助医生。", "The dog helps the doctor.", "r5+role0"), ("医生帮助狗。", "The doctor helps the dog.", "r5+role1"),
    ("鱼吃学生。", "The fish eats the student.", "e1+role0"), ("学生吃鱼。", "The student eats the fish.", "e1+role1"),
]
GAVE = _pair("我们给了母亲一支手表。", "We gave our mother a watch.",
             [("我们", "we"), ("给", "to give"), ("了", "(completed action marker)"), ("母亲", "mother"), ("一", "one"), ("支", "(classifier)"), ("手表", "watch")], "g1")


def test_roles_is_unchanged():
    pairs = [HELPS, CHASES, TRUST, BOOKED, MANY, IS_STUDENT, IS_TEACHER, IS_ENGINEER, EATS, *ANIMALS]
    assert [(p.src, p.tgt, p.id) for p in role_pairs(pairs, per_pair=1, seed=0)] == ROLES_BEFORE
    assert all(p.extra["augmented"] == "roles" for p in role_pairs(pairs, per_pair=1, seed=0))
    made = role_pairs([GAVE, IS_STUDENT, IS_TEACHER, IS_ENGINEER], per_pair=1, seed=0)
    assert [p.tgt for p in made] == ["The student gave our teacher a watch.", "The teacher gave our student a watch."]  # kept as trained


@pytest.mark.slow  # loads and augments the HSK data (~5 s)
def test_roles_wide_on_the_hsk_data():
    data = load_data("hsk-zh-en")
    out = augment_dataset(data, ("roles-wide",), seed=0, per_pair=4)
    made = out.train[len(data.train) :]
    assert len(made) == out.spec["augment"]["added"]["roles-wide"] >= 300
    held = {H.normalise(p.src) for p in data.valid + data.test}
    assert all(p.extra["augmented"] == "roles-wide" and not _near_word_order(p.src) and H.normalise(p.src) not in held for p in made)
    assert all(p.tgt[:1].isupper() and p.tgt[-1] in ".!" and p.src[-1] in "。！" for p in made)
