"""The words the tension detector knows (see :mod:`engrammar.recall.tensions`): general
English, grouped by the role a word plays in a statement."""

from __future__ import annotations

import re

from .text import stem as _stem


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


def _phrases(text: str) -> frozenset[str]:
    return frozenset(p.strip() for p in text.split("|"))


NEGATORS = _words("not no never none nobody nothing neither nor without cannot zero barely hardly")
# Affect: a liking and its opposite are a polarity, as a negation is.
POSITIVE = _words(
    """love loves loved like likes liked enjoy enjoys enjoyed adore adores prefer prefers
    fond fan obsessed great good amazing fascinating fun interesting"""
)
NEGATIVE = _words(
    """hate hates hated dislike dislikes disliked detest despise loathe boring bored awful
    terrible bad horrible tedious dull gross worst"""
)
# Stances worded otherwise: "can't stand jazz", "I'm so over Marvel films", "sick of it".
STANCES = re.compile(
    r"\b(?:can'?t|cannot|can not) stand\b|\bsick of\b|\btired of\b|\bfed up with\b"
    r"|\b(?:i'?m|i am|we'?re|we are) (?:so |totally |completely )?over (?!the moon\b|\d)"
    r"|\blost (?:all )?interest\b|\bdriv(?:e|es) me (?:mad|crazy|nuts)\b|\bgone off\b",
    re.I,
)
# Likings worded otherwise: "mushrooms have grown on me", "I've come round to jazz".
LIKINGS = re.compile(
    r"\b(?:grown|grew) on (?:me|us)\b|\bc[oa]me (?:a)?round to\b|\b(?:can'?t|cannot) get enough"
    r" of\b|\bgot (?:really )?into\b|\bbecome (?:a |an )?(?:\w+ )?(?:fan|obsessed)\b",
    re.I,
)
# Negations that deny nothing: "I can't wait", "no idea", "never give up".
IDIOMS = re.compile(
    r"\b(?:can'?t|cannot|couldn'?t) (?:wait|stop|help)\b|\bno (?:doubt|worries|idea"
    r"|wonder|problem|joke|kidding|matter|rush)\b|\b(?:never|not|don'?t|won'?t) (?:give|giving)"
    r" up\b|\bnot (?:bad|only|to mention)\b|\bwhy not\b|\bnever (?:knew|thought|expected)\b",
    re.I,
)
ADDITIVE = _words("also too either another")
# A change the newer statement announces; single words and phrases.
CHANGE = _words(
    """moved relocated switched changed quit stopped left sold became become anymore now
    replaced married divorced retired resigned cancelled canceled postponed rescheduled
    renamed transferred promoted fired hired dropped ended graduated delayed upgraded
    nowadays currently lately ditched dumped started began joined died scrapped rehomed
    deleted swapped passed closed folded traded stole stolen nicked migrated died rehome
    cleared dyed wiped turned instead fired lost adopted"""
)
CHANGE_PHRASES = _phrases(
    """no longer|any longer|any more|broke up|split up|passed away|gave up|given up|give up
    |called off|laid off|pushed to|went up|went down|gone up|gone down|down to|pushed back|on hold
    |backed out|pulled out|change of plan|stepped down|these days|at the moment|from now on
    |used to|no more|fell through|got rid|gave away|is off|are off|instead of|decided not to
    |decided against|changed my mind|moved out|am off|'s off|not happening|thing of the past
    |not going ahead|cut out|paid off|kicked|went back to|back to|is over|are over|wrote off
    |written off|came off|took me off|taken me off|packed in|fell out|falling out|shaved off
    |final payment|last payment|not renew|not renewed|put down|pulled the plug|gone over to
    |went over to|moved over to|stepped back from"""
)
# What follows a change word that makes it no change: "dropped off", "left for Rome".
NOT_A_CHANGE = {
    "dropped": _words("off by in on"),
    "left": _words("over behind after in on at of with and but to for me us him her them you"),
    "moved": _words("by"),
    "ended": _words("up with in at on"),
    "stopped": _words("by at in off over for"),
    "passed": _words(
        "the a an my our your his her their by through out on up me us it him them to down"
    ),
    "closed": _words("on"),
    "folded": _words("the a an my our your his her their it them up"),
    "fired": _words("up"),
    "sold": _words("out"),
    "turned": _words("out up down off on into around to"),
}
# Markers of the present that narration uses too: they need a closer match to count.
PRESENT = _phrases("now|these days|nowadays|currently|lately|at the moment|from now on")
WEAK_CHANGE = PRESENT | _phrases("became|become|started|began|joined|back to|down to|turned")
# Changes that end what they are done to: "quit teaching", "gave up tennis".
ENDING = _phrases(
    """quit|stopped|left|sold|cancelled|canceled|dropped|ended|retired|resigned|ditched
    |dumped|swapped|replaced|gone|no longer|no more|gave up|given up|give up|called off|got rid
    |gave away|cut out|moved out|thing of the past|not going ahead|kicked|wrote off
    |written off|came off|took me off|taken me off|packed in|stole|stolen|nicked|died|rehome
    |cleared|wiped|stepped back from|final payment|last payment|not renew|not renewed|put down|pulled the plug"""
)
# Changes that undo a plan ("I'm planning a trip to Peru" / "The Peru trip is off").
CANCELS = _phrases(
    """cancelled|canceled|postponed|rescheduled|delayed|scrapped|dropped|called off|is off
    |are off|decided not to|decided against|changed my mind|fell through|pushed back|on hold
    |instead of|instead|change of plan|pulled the plug|not happening|not going ahead|no longer|gave up"""
)
# Changes done to an object: the object must be what the older statement names.
TRANSITIVE = _phrases(
    "replaced|switched|sold|changed|swapped|upgraded|dropped|cancelled|deleted|migrated|instead of"
    "|lost"
)
# A reply that opens with one of these corrects what was said before it.
CORRECTION = re.compile(
    r"^\s*(?:(?:no|nope|nah|wait|sorry|oops|not really|not quite)\s*[,:;.!-]"
    r"|(?:actually|correction|update|scratch that|not any ?more|not any longer|in fact)\b)"
    r"[\s,:;.!-]*",
    re.I,
)
# Words that open a sentence before its subject ("so", "honestly", "these days").
LEADING = _words(
    """so well now yesterday today recently lately honestly actually correction update oops
    wait btw finally officially basically just anyway sadly luckily unfortunately still
    currently nowadays also"""
)
FREQUENCY = _words("always usually often sometimes rarely ever twice daily weekly")
PAST = _words(
    """was were did went had ran saw met took came made got yesterday ago last today tonight
    once will gonna bought ate drank sold wore drove gave flew quit broke"""
)
# Frames that hold one value: where one lives, works, is called, a favourite.
FUNCTIONAL = _words(
    """live lives living lived born name named called favorite favourite birthday deadline
    age work works working job employed married manager boss address prefer main usual"""
)
RESIDENCE = _words("live lives living lived moved move relocated home based")
COPULA = _words("is are was were")
STATUS = _words("single married divorced engaged widowed separated dating")
# Exclusive states: a term of a class replaces another of the same class.
CLASSES = {
    "diet": "vegetarian vegan pescatarian meat omnivore",
    "tenure": "rent renting rented renter own owner homeowner mortgage bought",
    "employment": "unemployed employed hired jobless",
    "commute": "drive drives driving cycle cycles cycling bike bikes walk walks walking bus "
    "train subway metro tube",
    "os": "windows linux macos mac ubuntu",
}


def _by_item(table: dict[str, str], sep: str | None = None) -> dict[str, str]:
    """``{name: "item item ..."}`` read the other way: each item to its name."""
    return {item: name for name, items in table.items() for item in items.split(sep)}


CLASS_OF = _by_item(CLASSES)
# Classes named in several words: a night owl is no morning person.
CLASS_PHRASES = _by_item(
    {
        "chronotype": "morning person|night owl|early bird|early riser|night person",
        "doneness": "well done|medium rare|rare",
        "seat": "window seat|window seats|aisle seat|aisle seats|middle seat",
    },
    "|",
)
# Words for one thing: "job" / "work", "doctor" / "GP"; a kind and its general word.
SYNONYMS = [
    "college university school student studies studying uni degree course",
    "job work works working career employer company",
    "earn earns salary pay paid income wage",
    "doctor gp physician",
    "kid kids child children baby babies",
    "email e-mail address inbox",
]
SYNONYM = {_stem(w): i for i, group in enumerate(SYNONYMS) for w in group.split()}
# A general word and its kinds are one thing ("I don't drink alcohol" / "I drink wine");
# two kinds are not ("dogs" / "cats").
KINDS = {
    "alcohol booze drink drinking": "wine beer whisky vodka gin pint pints cocktail",
    "pet pets": "dog dogs puppy cat cats kitten hamster rabbit",
    "caffeine": "coffee coffees espresso latte",
    "smoke smoking smoker": "cigarette cigarettes",
}
GENERAL = {_stem(g): i for i, (gs, _) in enumerate(KINDS.items()) for g in gs.split()}
SPECIFIC = {_stem(k): i for i, (_, ks) in enumerate(KINDS.items()) for k in ks.split()}
# Units belong to a value ("60k a year"), not to what the value is of.
UNITS = _words(
    """year years month months week weeks day days hour hours minute minutes pound pounds kilo
    kilos kg miles km dollar dollars euros percent mg"""
)
MONTHS = _words(
    """january february march april may june july august september october november december
    monday tuesday wednesday thursday friday saturday sunday weekday weekend morning afternoon
    evening night"""
)
NUMBER_WORDS = _words(
    """one two three four five six seven eight nine ten eleven twelve twenty thirty forty
    fifty hundred first second third fourth fifth noon midnight weekly fortnightly daily
    monthly"""
)
RELATIONS = _words(
    """sister brother wife husband son daughter mom mum mother dad father friend kids kid
    children child parents partner boyfriend girlfriend cousin aunt uncle grandma grandpa
    neighbour neighbor colleague coworker roommate flatmate manager boss landlord mate pal
    buddy"""
)
OPPOSITES = [
    ("long", "short"),
    ("early", "late"),
    ("hot", "cold"),
    ("big", "small"),
    ("open", "closed"),
    ("alive", "dead"),
    ("fine healthy healed fixed", "hurt injured broken broke tore torn sprained sick ill"),
]
OPPOSITE = {
    w: frozenset(other.split())
    for one, two in OPPOSITES
    for side, other in ((one, two), (two, one))
    for w in side.split()
}
# Words that are not what a statement is about.
VAGUE = _words("it that this these those there which what them")
EVALUATIVE = (
    POSITIVE | NEGATIVE | _words("awesome beautiful cool lovely nice perfect tough hard easy")
)
NOT_CONTENT = (
    NEGATORS
    | POSITIVE
    | NEGATIVE
    | FREQUENCY
    | ADDITIVE
    | CHANGE
    | _words(
        """really very new old finally actually every mostly honestly completely around about
        some something anything someone us last next since ago soon today tonight yesterday
        tomorrow recently plan planning want think going make keep use uses using yet give
        giving take taking find go done"""
    )
)
IRREGULAR = _by_item(
    {
        "eat": "ate eaten",
        "drink": "drank drunk",
        "run": "ran",
        "go": "went gone",
        "buy": "bought",
        "sell": "sold",
        "drive": "drove driven",
        "take": "took taken",
        "give": "gave given",
        "teach": "taught",
        "fly": "flew flown",
        "speak": "spoke spoken",
    }
)
# A request, plan, wish or hedge (lower-cased words, contractions split): no statement of fact.
TENTATIVE = re.compile(
    r"^(?:(?:and|but|so|well|actually|just|oh) )*(?:"
    r"(?:i|we) (?:am|are|was|were|have been) (?:\w+ )?(?:thinking|considering|planning"
    r"|looking|wondering|hoping|trying|curious|interested|debating|deciding|not sure)\b"
    r"|(?:i|we) (?:\w+ )?(?:would|will|could|might|may|should|must)\b"
    r"|(?:i|we) (?:\w+ )?(?:do not )?(?:want|wanna|need|hope|wish|plan|intend|think|guess"
    r"|wonder|feel like)\b"
    r"|(?:can|could|would|will|should) (?:you|i|we)\b|please\b|help me\b|tell me\b|let me\b"
    r"|let 's\b|give me\b|show me\b|if\b|maybe\b|perhaps\b|probably\b"
    r"|(?:provide|write|rewrite|list|explain|describe|summarize|summarise|translate|generate"
    r"|create|act|suggest|recommend|include|remember|imagine|compare|find|check|make sure)\b)"
)
# A job stated, and a job changed; studies, and their end; a partner, and a break-up.
JOB_FRAME = re.compile(
    r"\bwork(?:s|ing)? (?:at|for|as|in)\b|\bjobs?\b|\b(?:employed|unemployed|freelance"
    r"|freelancer|employer|career)\b|\b(?:i|we) am an? (?:\w+ ){1,3}(?:at|for)\b"
)
JOB_CHANGE = re.compile(
    r"\bnew (?:job|position|role|employer)\b|\bhired\b|\bgot (?:a|the) job\b"
    r"|\b(?:took|accepted) (?:a|an|the) (?:\w+ ){0,2}job\b|\b(?:promoted|retired|resigned)\b"
    r"|\blaid off\b|\b(?:quit|left|lost) (?:my|the) job\b|\bstarted (?:a|my) (?:\w+ )?job\b"
    r"|\bstarted work(?:ing)? (?:at|for|as)\b|\bback to work\b|\b(?:switched|changed) careers?\b"
    r"|\bin (?:my|our) notice\b|\bmy (?:last|final) (?:day|shift)\b"
)
STUDY = re.compile(
    r"\b(?:student|studying|trainee|apprentice|at (?:uni|university|college|school))\b"
    r"|\b(?:doing|year of) (?:a|an|my|the) (?:\w+ ){0,2}(?:degree|course|phd|masters)\b"
)
STUDY_END = re.compile(
    r"\b(?:graduated|dropped out|qualified as|finished (?:uni|university|college|school|my "
    r"degree|my studies|my course))\b"
)
PARTNER = re.compile(
    r"\b(?:boyfriend|girlfriend|partner|husband|wife|fiance|fiancee|married|engaged|dating"
    r"|going out with|seeing (?:someone|a)|in a relationship|best (?:friend|mate))\b"
)
BREAK_UP = re.compile(
    r"\b(?:broke up|split up|separated|divorced|divorce|dumped|my ex|not together"
    r"|ended (?:it|things)|called off the engagement|call(?:ed)? it quits|fell out"
    r"|(?:we|i) split|broke (?:it|things) off|separate ways|not (?:speaking|talking)"
    r"|(?:we|i) are (?:over|done|through))\b"
)
