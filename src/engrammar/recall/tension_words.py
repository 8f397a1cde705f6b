"""The words the tension detector knows (see :mod:`engrammar.recall.tensions`): negators,
affect words, announced changes, exclusive classes, kinds and synonyms, value types.

General English, not any data set's words."""

from __future__ import annotations

import re

from .text import stem as _stem

NEGATORS = frozenset(
    "not no never none nobody nothing neither nor without hardly cannot zero".split()
)
POSITIVE = frozenset(
    """love loves loved like likes liked enjoy enjoys enjoyed adore adores prefer prefers happy
    glad fond fascinating fascinated great good wonderful amazing interesting fun fan
    obsessed""".split()
)
NEGATIVE = frozenset(
    """hate hates hated dislike dislikes disliked detest detests despise loathe unhappy sad
    boring bored awful terrible bad horrible annoying annoyed tedious dull overrated gross
    disgusting bores bore worst""".split()
)
FREQUENCY = frozenset(
    "always usually often sometimes rarely ever twice daily weekly nightly".split()
)
ADDITIVE = frozenset("also too either another".split())
# A change announced by the newer statement; "new" counts only for something the older names.
CHANGE = frozenset(
    """moved relocated switched switch changed quit stopped left sold became become anymore now
    migrated replaced married divorced retired resigned cancelled canceled postponed rescheduled
    renamed transferred promoted fired hired dropped ex ended graduated delayed upgraded
    downgraded nowadays currently lately traded ditched dumped wiped uninstalled started began
    joined died stolen scrapped shelved axed dyed totalled totaled rehomed deleted upped bumped
    cleared closed shifted nicked swapped passed withdrew withdrawn deferred folded bumping
    upping overtaken overtook stole""".split()
)
# "fired up", "dropped off": the change word followed by these is no change.
NOT_A_CHANGE = {
    "fired": ("up",),
    "dropped": ("off", "by", "in"),
    # "three chapters left to read", "it left me speechless", "I left for Rome" (a trip)
    "left": (*"over behind after in on at of with and but to for me us him her them you".split(),),
    "moved": ("by",),  # "moved by her paintings"
    "ended": ("up", "with", "in", "at", "on"),
    "stopped": ("by", "at", "in", "off", "over", "for"),
    "sold": ("out",),
    "bumped": ("into",),  # met
    # "passed the exam", "passed by", "a torch passed to ...": no one died
    "passed": (
        *"""the a an my our your his her their by through out on up me us it him them this that
        to down around along over into""".split(),
    ),
    "cleared": ("me", "us", "him", "her", "them", "for", "to", "up"),  # allowed; "cleared up"
    "closed": ("on",),  # "closed on the house": bought it
    # "folded the laundry": a thing folded, not a club or a firm that closed
    "folded": (*"the a an my our your his her their it them up".split(),),
    "bumping": ("into",),
}
AMOUNTS = frozenset("most all much a so too the my our space time".split())
ACCUSTOMED = frozenset("am is are was were be been get got getting".split())
# Several words announcing a change; their words are not what the statement is about.
CHANGE_PHRASES = (
    "no longer",
    "any longer",
    "any more",
    "broke up",
    "split up",
    "passed away",
    "gave up",
    "given up",
    "called off",
    "pulled out",
    "laid off",
    "went up",
    "went down",
    "gone up",
    "gone down",
    "down to",
    "pushed back",
    "pushed to",
    "took up",
    "on hold",
    "chickened out",
    "backed out",
    "bailed on",
    "change of plan",
    "change of plans",
    "stepped down",
    "wrote off",
    "written off",
    "these days",
    "at the moment",
    "from now on",
    "used to",
    "no more",
    "fell through",
    "got rid",
    "gave away",
    "broke off",
    "is off",
    "are off",
    "am off",
    "gone over to",
    "went over to",
    "moved over to",
    "gone off",
    "back to",
    "took me off",
    "taken off",
    "came off",
    "coming off",
    "'s off",
    "instead of",
    "decided not to",
    "decided against",
    "changed my mind",
    "after all",
    "moved out",
    "not happening",
    "pulled the plug",
    "packed in",
    "fell out",
    "falling out",
    "final payment",
    "last payment",
    # "Red meat is a thing of the past for me", "Japan isn't going ahead", "I cut out coffee"
    "thing of the past",
    "not going ahead",
    "not go ahead",
    "not happen",
    "a no go",
    "rained off",
    "stepped back from",
    "not renew",
    "not renewed",
    "not renewing",
    "cut out",
    "kicked the habit",
)
# Verbs whose particle comes after their object: "I've cut sugar out", "we called it off".
SEPARABLE = {
    "cut": "out",
    "cutting": "out",
    "shaved": "off",
    "shave": "off",
    "give": "up",
    "gave": "up",
    "given": "up",
    "giving": "up",
    "call": "off",
    "called": "off",
    "calling": "off",
    "put": "off|up",
    "putting": "off|up",
    "packed": "in",
    # "the doctor has taken me off insulin"
    "take": "off",
    "taking": "off",
    "took": "off",
    "taken": "off",
}
# Irregular forms stemmed as their base: "I eat meat" / "I haven't eaten meat".
IRREGULAR = {
    form: base
    for base, forms in {
        "eat": "ate eaten",
        "drink": "drank drunk",
        "run": "ran",
        "go": "went gone",
        "buy": "bought",
        "sell": "sold",
        "wear": "wore worn",
        "ride": "rode ridden",
        "swim": "swam swum",
        "write": "wrote written",
        "speak": "spoke spoken",
        "teach": "taught",
        "drive": "drove driven",
        "take": "took taken",
        "give": "gave given",
        "get": "got gotten",
        "make": "made",
        "sing": "sang sung",
        "sleep": "slept",
        "fly": "flew flown",
        "begin": "began begun",
        "tear": "tore torn",
        "break": "broke broken",
        "see": "saw seen",
        "feel": "felt",
        "keep": "kept",
        "bring": "brought",
        "grow": "grew grown",
    }.items()
    for form in forms.split()
}
# Opposite states of one thing: "long hair" / "short hair", "my knee is fine" / "I tore ...".
ANTONYMS = [
    ("long", "short"),
    ("early", "late"),
    ("hot", "cold"),
    ("big", "small"),
    ("fast", "slow"),
    ("full", "empty"),
    ("open", "closed"),
    ("loud", "quiet"),
    ("tidy", "messy"),
    ("alive", "dead"),
    ("awake", "asleep"),
    ("sober", "alcohol drunk booze"),
    ("fine healthy fixed healed", "hurt injured broke broken tore torn sprained sick ill bad"),
]
ANTONYM_OF = {
    w: frozenset(other.split())
    for one, two in ANTONYMS
    for side, other in ((one, two), (two, one))
    for w in side.split()
}
# Words of intent and light verbs: "I'm planning to do a PhD" is about the PhD.
LIGHT = frozenset(
    """plan plans planning planned decide decided deciding want wants wanted think go goes going
    went make makes made making keep find finds done pick picks picked picking agree agrees
    agreed disagree feel feels felt feeling give gives gave given found
    giving take takes took taken taking""".split()
)
# When something happened is not what it is about.
WHEN = frozenset("last next since ago soon today tonight yesterday tomorrow recently".split())
# Past narration: an older statement telling what happened is no state a newer one can change.
PAST = frozenset(
    """was were did went had ran saw met took came made got yesterday ago last today tonight
    once will gonna bought ate drank sold wore rode swam wrote spoke taught drove gave sang slept
    flew began tore broke kept brought grew""".split()
)
# Exclusive states: a term of a class replaces another of the same class ("I rent my flat" /
# "we bought our flat"), as a value would.
CLASSES = {
    "diet": "vegetarian vegan pescatarian meat omnivore carnivore",
    "tenure": "rent renting rented renter own owner homeowner homeowners bought mortgage",
    "employment": "unemployed employed hired jobless",
    "chronotype": "morning person|night owl|early bird|early riser|night person",
    "commute": "drive drives driving cycle cycles cycling bike bikes biking walk walks walking "
    "bus train subway metro tube carpool",
    "doneness": "rare|medium rare|medium|well done",
    "os": "windows linux macos mac ubuntu",
    "seat": "window seat|window seats|aisle seat|aisle seats|middle seat",
}
CLASS_OF = {
    term: name
    for name, terms in CLASSES.items()
    for term in (terms.split("|") if "|" in terms else terms.split())
}
CLASS_TYPES = frozenset(CLASSES)
CLASS_PHRASES = sorted((t for t in CLASS_OF if " " in t), key=len, reverse=True)
# A kind of thing and its general word are the same thing ("I don't drink alcohol" / "I drink
# wine"); two kinds are not ("dogs" / "cats"). The general words come first.
KINDS = {
    "alcohol booze liquor": "wine beer whisky whiskey vodka gin rum cocktail pint pints",
    "pet": "dog puppi pup cat kitten hamster rabbit parrot",
    "kid child children": "baby babies",
    "caffeine": "coffee coffees espresso latte cappuccino",
    "parent parents": "mum mom dad mother father mums moms dads",
    "smoke smokes smoking smoker": "cigarette cigarettes cigs fags",
}
# Words for one attribute: "second year of college" / "third-year student".
SYNONYMS = [
    "college university school student studies studying uni degree course courses",
    "job work works working career employer company",
    "earn earns earning salary pay paid income wage wages",
    "doctor gp physician",
    "fly flying flight flights",
    "food cuisine",
    "email e-mail address inbox",
    "hurt hurts hurting sore ache aches aching pain painful",
]
SYNONYM = {_stem(w): i for i, group in enumerate(SYNONYMS) for w in group.split()}
GENERAL = {_stem(g): i for i, (gs, _) in enumerate(KINDS.items()) for g in gs.split()}
SPECIFIC = {_stem(k): i for i, (_, ks) in enumerate(KINDS.items()) for k in ks.split()}
# Units belong to a value ("60k a year"), not to what the value is of.
UNITS = frozenset(
    """year years month months week weeks day days hour hours minute minutes pound pounds kilo
    kilos kg lbs mile miles km dollar dollars euro euros percent ages""".split()
)
FUNCTIONAL = frozenset(
    """live lives living lived born name named called favorite favourite birthday deadline
    age old work works working worked job employed married manager boss address prefer prefers
    preferred main primary usual""".split()
)
# "It was amazing" / "It was awesome": opinions about a vague "it" are not facts with values.
VAGUE = frozenset(["it", "that", "this", "these", "those", "there", "which", "what", "them"])
EVALUATIVE = (
    POSITIVE
    | NEGATIVE
    | frozenset(
        """awesome amazing gorgeous beautiful cool lovely nice incredible fantastic cute sweet
        perfect special inspiring exciting tough hard easy crazy insane wild""".split()
    )
)
COPULA = frozenset("is are was were".split())
OBJECTS = frozenset("me us you him her them it".split())
DETERMINERS = frozenset("a an the my our your his her their its him them".split())
RELATIONS = frozenset(
    """sister brother wife husband son daughter mom mother dad father friend kids kid children
    child parents partner boyfriend girlfriend cousin aunt uncle grandma grandmother grandpa
    grandfather neighbor neighbour colleague coworker roommate dog cat mate mates pal buddy
    flatmate housemate nan gran nephew niece""".split()
)
ADJ_BEFORE_RELATION = frozenset("best older younger little big new old twin".split())
STATUS = frozenset("single married divorced engaged widowed separated dating remarried".split())
MONTHS = frozenset(
    """january february march april may june july august september october november december
    monday tuesday wednesday thursday friday saturday sunday""".split()
)
NUMBER_WORDS = frozenset(
    """one two three four five six seven eight nine ten eleven twelve twenty thirty forty fifty
    hundred first second third fourth fifth sixth seventh eighth ninth tenth midnight
    noon""".split()
)
RESIDENCE = frozenset("live lives living lived moved move relocated home based".split())
LEADING = (
    CHANGE
    | FREQUENCY
    | frozenset(
        "so well yesterday today recently lately honestly actually correction update oops"
        " wait ps btw finally officially basically literally totally seriously definitely just"
        # sentence adverbs: "Weirdly, sushi is now my favourite"
        " weirdly oddly strangely funnily surprisingly luckily unluckily unfortunately fortunately"
        " sadly happily obviously apparently anyway anyways ironically annoyingly thankfully"
        " admittedly frankly personally naturally clearly".split()
    )
)
NOT_CONTENT = (
    NEGATORS
    | POSITIVE
    | NEGATIVE
    | FREQUENCY
    | ADDITIVE
    | CHANGE
    | LIGHT
    | {"really", "very", "new", "finally", "actually", "every", "mostly", "mainly", "honestly"}
    | {"seriously", "frankly", "basically", "literally", "totally", "completely", "entirely"}
    | {"absolute", "absolutely"}
    | {"around", "roughly", "approximately", "nearly", "almost", "about", "some", "over"}
    | {"something", "anything", "someone", "anyone", "somebody", "anybody", "us"}
    | WHEN
)
# Words between a change word and what it changes ("I quit my job at St. Mary's").
ANCHOR = 6
# Changes that end what the older statement states: "I left teaching", "gave up tennis".
ENDING = frozenset(
    """quit stopped left sold cancelled canceled dropped ended retired resigned ditched dumped
    wiped uninstalled cleared closed nicked swapped traded replaced withdrew withdrawn
    passed gone deferred""".split()
) | frozenset(
    [
        "no longer",
        "no more",
        "gave up",
        "given up",
        "give up",
        "called off",
        "broke up",
        "broke off",
        "got rid",
        "gave away",
        "cut out",
        "put off",
        "moved out",
        "taken off",
        "took off",
        "final payment",
        "last payment",
        "pulled the plug",
        "packed in",
        "thing of the past",
        "not going ahead",
        "not go ahead",
        "kicked the habit",
        "stepped back from",
        "stole",
        "rehomed",
        "not renew",
        "not renewed",
        "not renewing",
        "folded",
        "lost",
    ]
)
# Markers that also occur in plain narration: they need a closer match to count.
WEAK_CHANGE = frozenset(
    """now|these days|at the moment|from now on|down to|became|become|nowadays|currently|lately|used to|started|began|joined|back to""".split(
        "|"
    )
)
WEAK_OVERLAP = 0.3
# Chat spellings without the apostrophe: "im", "cant", "didnt".
CHAT_SPELLINGS = {
    "im": ["i", "am"],
    "ive": ["i", "have"],
    "cant": ["can", "not"],
    "wont": ["will", "not"],
    "youre": ["you", "are"],
    "theyre": ["they", "are"],
    **{
        f"{aux}nt": [aux, "not"]
        for aux in "do does did is was are were have has had could would should".split()
    },
}
# "I had to stop playing", "we decided to sell the car": what was done, as its past form.
DONE = {
    "stop": "stopped",
    "move": "moved",
    "sell": "sold",
    "cancel": "cancelled",
    "leave": "left",
    "change": "changed",
    "switch": "switched",
    "drop": "dropped",
    "retire": "retired",
    "resign": "resigned",
    "postpone": "postponed",
    "replace": "replaced",
    "end": "ended",
    "rehome": "rehomed",
    "close": "closed",
}
# A job stated, and a job changed (on lower-cased words, contractions split: "i am a ...").
JOB_FRAME = re.compile(
    r"\b(?:work|works|working) (?:at|for|as|in)\b|\bjobs?\b|\b(?:employed|unemployed|freelance|"
    r"freelancer|freelancing|self employed|employer|career|stay at home)\b|\b(?:i|we) am an? (?:\w+ ){1,3}(?:at|for)\b"
)
JOB_CHANGE = re.compile(
    r"\bnew (?:job|position|role|employer)\b|\b(?:got|get|been|was|were|am) hired\b"
    r"|\bhired (?:at|by|as)\b|\bgot (?:a|the) job\b|\b(?:took|take|taken|accepted) (?:a|an|the) (?:\w+ ){0,2}job\b"
    r"|\b(?:promoted|retired|resigned|laid off)\b|\bjoined (?:\w+ ){1,3}as\b"
    r"|\b(?:quit|left|lost) (?:my|the|our) job\b|\bstarted (?:a|my) (?:\w+ )?job\b"
    r"|\bstarted (?:working|work) (?:at|for|as)\b"
    r"|\b(?:went|go|going|gone|am|is) back to work\b|\b(?:switched|changed) careers?\b"
    r"|\bretrained as\b"
    r"|\b(?:switched|moved|transferred) (?:over )?to (?:the|a|an) (?:\w+ ){0,3}(?:team|department|ward"
    r"|unit|role|position)\b"
    r"|\b(?:handed|handing|put|putting) in (?:my|our|the) notice\b|\bgave (?:my |our )?notice\b"
    r"|\b(?:my|our) (?:last|final) (?:day|shift) (?:at|with|in|for)\b"
)
