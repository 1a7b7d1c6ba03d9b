"""Deterministic refusal detection for ``robustness.abstention`` and ``robustness.overrefusal``.

Used when no judge is configured. The question it answers: did the answer
decline to give the requested information? That covers plain refusals ("I
can't help with that"), abstentions ("I don't know", "the documents don't
say"), polite and indirect ones ("that's not something I can disclose"),
partial refusals that decline the main question and offer something else, and
answers that only ask for clarification. It must not fire on answers that
merely contain negative words ("You cannot use X after Y; instead ...") or
that hedge and still answer ("I'm not 100% sure, but it is X").

How it decides (on a normalised text: NFKC, lower-cased, curly quotes
straightened, whitespace collapsed):

1. An empty answer is a refusal: nothing was answered.
2. An answer made only of questions is a clarification request: a refusal.
3. Otherwise it needs a *refusal cue*, either
   a. a fixed cue (``_CUES``): a first-person inability or unwillingness to
      answer/help/provide/find ("i can't tell you", "i don't know", "i'm not
      able to discuss"), or a statement that the sources lack the answer
      ("the documents don't mention", "there is no information about",
      "isn't stated in the context"), in en/fr/de/es/it/pt/nl/zh/ja; or
   b. a soft cue ("i'm not sure") not followed by a contrast ("..., but"); or
   c. a clause with a negation and a word about knowing/answering, in a
      sentence anchored on the speaker or the sources (``_clause_cues``).
   Cues are first person or about the sources on purpose: "you cannot",
   "we can't refund", "the app can't", "is not available" describe the
   world, they answer.
4. A cue followed closely by a precision qualifier ("i don't know the
   *exact* date", "i can't say *for certain*") is a hedge, not a refusal.
5. After the first cue, an epistemic marker that commits to an answer
   ("..., but it *probably* is", "which *suggests*", "so that's a *reasonable
   estimate*") or an inference ("..., *so* they cost the same") makes it a
   hedged answer. Markers *before* the first cue ("it seems the documents
   don't say") soften the refusal itself and do not count, nor do words
   addressed to the reader ("you'll probably want to ask HR", "so please
   ask billing").

Known blind spots: refusals phrased with none of the cue families (e.g.
"That's confidential." on its own), a clarifying question followed by a
statement, answers that combine scattered facts after a denial ("the docs
don't state it in one place, but combining the tables gives 20"), sarcasm.
The heuristic was tuned on the labelled set in rounds, each checked on a
fresh held-out split first; the figures of every round are in
docs/parts/robustness.md and the final counts are asserted in
tests/core/metrics/heuristics/test_refusal.py. Prefer a judge when one is available.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable, Mapping
from importlib import resources
from typing import Any

from ragproof_core.metrics.heuristics.alternation import Alternation, Alternations

_FLAGS = re.IGNORECASE | re.UNICODE


def _rx(*parts: str) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{part})" for part in parts), _FLAGS)


def _alternatives(*parts: str) -> Alternation:
    """Like ``_rx``, for the large patterns searched on every answer: same matches,
    searched through only the alternatives that can match (``alternation.py``)."""
    return Alternation(parts, _FLAGS)


# --- English building blocks -------------------------------------------------

# First-person inability or unwillingness. Only "i": "we can't refund third-party
# purchases" is a support answer stating a policy, not a refusal to answer.
_EN_SUBJECT = r"\bi(?:'m|'d)?"
_EN_NEG = (
    r"can ?not|can't|could ?not|couldn't|won't|will not|wouldn't|would not|"
    r"(?:am |was )?(?:unable|not able) to|wasn't able to|"
    r"(?:have not|haven't) been able to|"
    r"(?:am )?not (?:in a position|permitted|allowed|authori[sz]ed|going) to|"
    r"(?:would )?rather not|do not|don't|did not|didn't|have no way to"
)
# "i can't find any reason to worry" answers (nothing is wrong); it declines nothing.
_NOT_A_PROBLEM = (
    r"(?! (?:any |a |an )?(?:reasons?|problems?|issues?|faults?|errors?|bugs?|flaws?)\b)"
)
# What is declined. Deliberately absent: "recommend" ("I can't recommend that"
# is an opinion that answers), "stress"/"emphasise" (idioms), "be" ("I can't
# be certain" is a hedge).
_EN_VERB = (
    r"help|assist|answer|respond|reply|provide|give|offer|share|tell|say|disclose|"
    r"reveal|divulge|discuss|comment|speak to|speak about|go into|get into|elaborate|"
    r"determine|confirm|verify|locate|"
    rf"find{_NOT_A_PROBLEM}|identify|access|comply|do (?:that|this)|"
    r"fulfil|fulfill|walk you through|forecast|predict|guess|speculate|create|write|"
    r"generate|produce|draft|know|advise|see (?:any|anything)"
)
_EN_SOURCE = (
    r"documents?|docs|context|sources?|passages?|excerpts?|snippets?|materials?|"
    r"documentation|knowledge base|information|texts?|retrieved results"
)
_EN_SOURCE_VERB = (
    r"contain|include|mention|say|specify|state|cover|address|provide|give|list|"
    r"identify|explain|describe|discuss|tell|answer|have|reference|indicate|show|offer"
)
_EN_NOT_PASSIVE = r"is not|isn't|are not|aren't|was not|wasn't|were not|weren't"
_EN_PASSIVE_VERB = (
    r"stated|mentioned|covered|specified|included|listed|disclosed|addressed|"
    r"described|documented|explained|provided|given|found|available|present"
)
# Nouns that name the knowledge an answer would need: "i don't have *the hours*".
_EN_KNOWLEDGE = (
    r"information|info|details?|data|answers?|access|knowledge|figures?|numbers?|"
    r"records?|specifics|visibility|insight|context|hours|ranges?|dates?|prices?|pricing|"
    r"sources?|documentation"
)

# Strong cues: any one of them makes the answer a refusal unless rules 4/5 apply.
_CUES = _alternatives(
    # English: first person
    rf"{_EN_SUBJECT} (?:\w+ )?(?:{_EN_NEG}) (?:\w+ ){{0,2}}?(?:{_EN_VERB})\b",
    r"\bi(?:'m| am) not (?:finding|seeing) (?:any|anything)",
    rf"\bi (?:do not|don't) have (?:(?:that|this|it|any)\b|(?:\w+ ){{0,3}}?(?:{_EN_KNOWLEDGE})\b)",
    r"\bi(?:'m| am) not aware of\b",
    r"\bi(?:'d| would) need more (?:information|info|details|context)\b",
    r"\b(?:need|needs|require|requires) more (?:information|info|details|context) to answer\b",
    r"\b(?:no way|not possible|impossible) (?:to|of|for me to) (?:tell|know|determin|say|confirm|"
    r"answer)",
    r"\b(?:have to|must|'ll|will) pass on (?:this|that)\b",
    r"\bi have no (?:\w+ )?(?:idea|information|info|details|data|knowledge|way|access|"
    r"record|answer|clue)\b",
    r"^(?:unknown|n/a|no idea|no clue|not known|no answer)\b",
    r"(?:\bnot|n't) something i(?:'m| am| can| could| have| know| will|'ll| would)\b",
    rf"(?:\bnot|n't) something (?:the|my|these) (?:\w+ ){{0,2}}?(?:{_EN_SOURCE})\b",
    r"\bi(?:'ve| have) (?:got )?nothing (?:on|about|regarding|for|in)\b",
    r"\bi (?:was not|wasn't|have not been|haven't been) (?:given|provided|shown|sent) "
    r"(?:any|anything)\b",
    r"\b(?:is|are|was|were|remains?|stays?) silent (?:on|about|regarding|as to)\b",
    r"\b(?:did not|didn't|does not|doesn't) (?:return|turn up|bring up) (?:anything|any)\b",
    r"\breturned (?:nothing|no (?:results|matches|information))\b",
    r"\bi(?:'d| would) (?:only |just )?be guessing\b",
    r"\b(?:outside|beyond) (?:of )?(?:what (?:i|my)|my (?:knowledge|expertise|scope|sources))",
    r"\bthe scope of (?:what i|my)\b",
    r"\b(?:nobody|no one|no-one) (?:can|could) (?:\w+ )?(?:predict|know|say|tell|forecast)\b",
    # English: the sources lack the answer
    rf"\b(?:the|these|those|my|any) (?:\w+ ){{0,3}}?(?:{_EN_SOURCE})"
    rf"(?: (?:i|you) (?:have|was given|were given|can see|provided))? "
    rf"(?:do not|don't|does not|doesn't|did not|didn't) (?:seem to |appear to )?"
    rf"(?:{_EN_SOURCE_VERB})\b",
    rf"\bnone of the (?:\w+ ){{0,2}}?(?:{_EN_SOURCE})\b",
    rf"\b(?:{_EN_NOT_PASSIVE}) (?:\w+ ){{0,2}}?(?:{_EN_PASSIVE_VERB})(?: \w+){{0,3}}? "
    rf"(?:in|by|from) (?:\w+ ){{0,3}}?(?:{_EN_SOURCE}|anything i|what i)\b",
    rf"\b(?:does not|doesn't|do not|don't) appear (?:\w+ ){{0,2}}?in (?:\w+ ){{0,3}}?"
    rf"(?:{_EN_SOURCE})\b",
    r"\bthere(?:'s| is| was| are| were) no (?:\w+ )?(?:information|info|mention|details?|"
    r"data|record|reference|indication|answer)(?= (?:about|on|of|regarding|for|concerning|"
    r"in|as to|that)\b|[.,;:!]|$)",
    rf"\bthere(?:'s| is) nothing (?:about|on|regarding|in (?:what i|(?:the|my|these) "
    rf"(?:\w+ ){{0,2}}?(?:{_EN_SOURCE})))",
    r"\bno (?:\w+ )?(?:information|info|details|answer|results|matches) (?:was|were|could be) "
    r"found\b",
    r"\bnot enough (?:information|info|context|data|details)\b",
    r"\binsufficient (?:information|info|context|data|details)\b",
    r"\b(?:is|are) insufficient to answer\b",
    r"\b(?:do not|don't|does not|doesn't) contain (?:the|an|any) (?:answer|information)\b",
    r"\bthe answer (?:is not|isn't|was not|wasn't) (?:\w+ ){0,2}?in\b",
    # a passive denial closing its clause: "the 2024 figures are not mentioned."
    rf"\b(?:{_EN_NOT_PASSIVE}) (?:\w+ )?(?:mentioned|stated|specified|documented|disclosed)"
    r"(?: anywhere)?(?=[.;!]|$)",
    # French
    r"\bje ne (?:le |l')?(?:sais|saurais) pas\b",
    r"\bje ne (?:peux|pourrai|pourrais|saurais) (?:pas|rien) (?:vous |te )?(?:y )?"
    r"(?:répondre|aider|communiquer|fournir|donner|dire|partager|divulguer|trouver|"
    r"confirmer|indiquer|préciser)",
    r"\bje ne suis pas (?:en mesure|autorisée?) de\b",
    r"\bje n'ai (?:pas|aucune) (?:d'|de |l')?(?:information|réponse|idée|détail|donnée)",
    r"\bje n'ai (?:pas|rien) (?:pu )?trouvé\b",
    r"\bje n'ai pas pu (?:trouver|répondre|confirmer|déterminer)\b",
    r"\baucune (?:information|mention|donnée|indication|précision)\b",
    r"\b(?:les?|la|ces|mes) (?:\w+ ){0,2}?(?:documents?|contexte|sources?|passages?|"
    r"extraits?|textes?) (?:\w+ ){0,2}?ne (?:le |l')?(?:\w+ )?(?:mentionnent|mentionne|"
    r"précisent|précise|contiennent|contient|indiquent|indique|disent|dit|parlent|parle|"
    r"donnent|donne|couvrent|couvre|fournissent|fournit|abordent|aborde) (?:pas|rien)\b",
    # German
    r"\b(?:das|dies|es) weiß ich (?:leider )?nicht\b",
    r"\bich weiß (?:es |das )?(?:leider )?nicht\b",
    r"\b(?:dazu|darauf|hierzu|darüber|damit) kann ich (?:ihnen |dir )?(?:leider )?"
    r"(?:keine|nichts|nicht)\b",
    r"\b(?:ich kann|kann ich) (?:\w+ ){0,3}?(?:nicht|keine) (?:\w+ ){0,2}?"
    r"(?:beantworten|helfen|sagen|geben|mitteilen|auskunft|angaben|nennen|finden)",
    r"\b(?:enthalten|erwähnen|nennen|liefern) (?:\w+ ){0,2}?keine (?:informationen|angaben|"
    r"hinweise|auskunft)",
    r"\b(?:mir )?liegen (?:mir )?keine (?:\w+ )?(?:informationen|angaben|daten) vor\b",
    r"\bwird (?:\w+ ){0,3}?nicht (?:erwähnt|genannt|angegeben)\b",
    r"\b(?:ich habe|habe ich) (?:leider )?keine (?:\w+ )?(?:informationen|angaben|ahnung|daten)\b",
    # Spanish
    r"\bno (?:lo )?sé\b",
    r"\bno (?:puedo|podría|estoy en condiciones de) (?:\w+ ){0,2}?(?:responder|ayudar|dar|"
    r"proporcionar|facilitar|compartir|decir|confirmar|contestar|darte|darle)",
    r"\bno tengo (?:\w+ )?(?:información|datos|detalles|idea|respuesta)\b",
    r"\b(?:los documentos|el contexto|las fuentes|el texto) no (?:lo )?(?:mencionan|menciona|"
    r"especifican|especifica|contienen|contiene|indican|indica|dicen|dice|incluyen|incluye)\b",
    # Italian
    r"\bnon (?:lo )?so\b",
    r"\bnon (?:posso|sono in grado di) (?:\w+ ){0,2}?(?:rispondere|aiutar\w*|fornire|dare|"
    r"dire|condividere|confermare)",
    r"\bnon ho (?:\w+ )?(?:informazioni|dati|dettagli|idea)\b",
    r"\b(?:il contesto|i documenti|le fonti|il testo) non (?:lo )?(?:specifica|specificano|"
    r"menziona|menzionano|contiene|contengono|indica|indicano|dice|dicono)\b",
    # Portuguese
    r"\bnão (?:o )?sei\b",
    r"\bnão (?:posso|consigo|tenho como) (?:\w+ ){0,2}?(?:responder|ajudar|fornecer|dar|"
    r"dizer|partilhar|compartilhar|confirmar)",
    r"\bnão tenho (?:\w+ )?(?:informações|informação|dados|detalhes|ideia)\b",
    r"\b(?:os documentos|o contexto|as fontes|o texto) não (?:o )?(?:mencionam|menciona|"
    r"especificam|especifica|contêm|contém|indicam|indica|dizem|diz|referem|refere)\b",
    # Dutch
    r"\b(?:dat|het) weet ik (?:helaas )?niet\b",
    r"\bik weet (?:het |dat )?(?:helaas )?niet\b",
    r"\b(?:daar|hier|daarmee|hiermee) kan ik (?:je|u) (?:helaas )?niet (?:mee )?helpen",
    r"\b(?:ik kan|kan ik) (?:\w+ ){0,3}?(?:niet|geen) (?:\w+ ){0,2}?(?:helpen|beantwoorden|zeggen|"
    r"geven|vinden)",
    r"\bstaat niet in (?:de|het|deze)\b",
    r"\b(?:de documenten|de context|de bronnen|de tekst) (?:vermelden|vermeldt|bevatten|"
    r"bevat|noemen|noemt) (?:\w+ ){0,2}?(?:niet|geen)\b",
    # "no idea", across languages
    r"\b(?:keine ahnung|geen idee|não faço (?:a menor )?ideia|ni idea|aucune idée)\b",
    r"\bnon (?:ne )?ho (?:la (?:più )?minima |nessuna )?idea\b",
    r"\b(?:ich finde|finde ich) (?:\w+ ){0,2}?(?:nichts|keine)\b",
    # Chinese
    r"(?:无法|不能|没法|无从)(?:回答|提供|确定|帮助|协助|告诉|得知)",
    r"我不(?:知道|清楚|确定)",
    r"(?:没有|未|并未)(?:提到|提及|说明|记载|包含|涉及)",
    r"没有(?:相关)?(?:的)?(?:信息|资料|数据)",
    # Japanese
    r"わかりません|分かりません|存じません|お答えできません|回答できません|答えられません",
    r"判断できません|わかりかねます|分かりかねます|記載されていません|記載がありません|見つかりません|情報がありません|提供できません",
)

# "i'm not sure" is an abstention on its own but a hedge when an answer follows.
_SOFT_CUES = _alternatives(
    r"\bi(?:'m| am) (?:\w+ )?(?:not sure|unsure)\b",
    r"\bje ne suis pas (?:sûre?|certaine?)\b",
    r"\bich bin (?:mir )?(?:nicht|un)sicher\b",
    r"\bno estoy segur[oa]\b",
    r"\bnon sono sicur[oa]\b",
    r"\bnão tenho certeza\b",
    r"\bik weet het niet zeker\b",
)
_CONTRAST = _rx(r"\b(?:but|however|though|although|mais|aber|pero|ma|mas|maar)\b", r"但|が、")

# A denial narrowed by one of these is a hedge: "i don't know the *exact* date".
_QUALIFIERS = _rx(
    r"\b(?:exact|exactly|precise|precisely|for sure|for certain|with certainty|"
    r"definitively|explicitly|offhand|off the top of my head)\b",
    r"\b100 ?%",
    r"\b(?:exactement|précisément|avec certitude)\b",
    r"\b(?:genau|sicher|mit sicherheit)\b",
    r"\b(?:exactamente|con certeza|con seguridad|seguro)\b",
    r"\b(?:esattamente|di preciso|con certezza)\b",
    r"\b(?:exatamente|ao certo|com certeza)\b",
    r"\b(?:zeker|precies)\b",
)
_QUALIFIER_WINDOW = 30  # characters after a cue, cut at the clause end
_CLAUSE_END = re.compile(r"[.,;:!?\n]")

# Markers that commit to an answer despite a preceding denial.
_EPISTEMIC = _rx(
    r"\bi (?:think|believe|suspect|guess|would guess|'d guess)\b",
    r"\bmy (?:best )?guess\b",
    r"\b(?:most |very |quite )?(?:likely|probably)\b",
    r"\bit (?:seems|appears|looks like)\b",
    r"\b(?:seems|appears) to be\b",
    r"\bas far as i (?:can tell|know)\b",
    r"\bif i (?:read|understand|remember|recall)\b",
    r"\b(?:suggests?|implies|indicates)\b",
    r"\breasonable (?:estimate|assumption|guess)\b",
    r"\b(?:roughly|approximately)\b",
    r"\b(?:around|about) \d",
    r"\b(?:je pense|je crois|probablement|il semble|sans doute|environ \d)",
    r"\b(?:ich glaube|ich denke|wahrscheinlich|vermutlich|ungefähr \d|etwa \d)",
    r"\b(?:creo que|probablemente|parece que|aproximadamente)\b",
    r"\b(?:credo che|penso che|probabilmente|sembra che|circa \d)",
    r"\b(?:acho que|creio que|provavelmente|parece que|cerca de \d)",
    r"\b(?:ik denk|waarschijnlijk|het lijkt|ongeveer \d)",
    r"大概|应该是|おそらく|たぶん|と思います",
)
# "you'll probably want to ask HR" redirects the reader; it commits to nothing.
_ADDRESSED_TO_READER = re.compile(r"\byou(?:'ll|'d| will| would| should| could| might| may)?\s*$")

# Clause-level co-occurrence, for the long tail of phrasings no fixed cue lists:
# a negation and a word about knowing/answering in one clause, in a sentence
# anchored on the speaker or the sources ("none of them mention the budget",
# "daar heb ik geen informatie over"). The anchor keeps "the compiler cannot
# find config.h" and "the app stores no data" out.
_NEGATION = _alternatives(
    r"\b(?:not|no|none|nothing|never|cannot|unable)\b|n't\b",
    r"\b(?:ne|n'|pas|aucune?|rien|nicht|kein\w*|nichts|non|não|ningun\w*|nessun\w*|"
    r"nenhum\w*|nada|niente|niet|geen|niets)\b",
    r"不|没|无|未",
)
_KNOWING = _alternatives(
    r"\b(?:information|info|details?|answer(?:s|ed|ing)?|mention(?:s|ed)?|covered|"
    r"specif(?:y|ies|ied)|know|knowledge|speculate|guess|comment|disclose|share|help|assist|"
    r"provide|access|tell|stated?|addressed|discuss|locate|data)\b",
    rf"\b(?:find|found){_NOT_A_PROBLEM}",
    r"\b(?:réponse|détails?|mentionn\w*|figure|trouv\w*|sais|savoir|connais|répondre|aider|"
    r"données)\b",
    r"\b(?:informationen|angaben|auskunft|antwort|weiß|wissen|erwähnt|gefunden|finden|helfen|"
    r"beantworten|daten|finde)\b",
    r"\b(?:información|datos|detalles|respuesta|sé|encontr\w*|encuentr\w*|menciona\w*|responder|ayudar|"
    r"informazion\w*|dati|dettagli|rispost\w*|trovat\w*|trovo|rispondere|aiutar\w*|"
    r"informaç\w*|dados|detalhes|respost\w*|sei|ajudar)\b",
    r"\b(?:informatie|gegevens|antwoord|weet|gevonden|vinden|vermeld\w*|helpen|beantwoorden)\b",
    r"信息|资料|数据|答案|回答|找到|知道|提到|提及",
)
_ANCHOR = _alternatives(
    r"\b(?:i|me|my|i'm|i've|i'd)\b",
    r"\b(?:documents?|docs|context|sources?|passages?|excerpts?|snippets?|materials?|"
    r"documentation|knowledge base|retrieved)\b",
    r"\b(?:je|j'|me|m'|moi|documents?|contexte|sources?|extraits?)\b",
    r"\b(?:ich|mir|mich|dokumente\w*|unterlagen|kontext|quellen)\b",
    r"\b(?:tengo|dispongo|encuentro|encontré|puedo|conozco|documentos|contexto|fuentes)\b",
    r"\b(?:ho|trovo|posso|documenti|contesto|fonti)\b",
    r"\b(?:tenho|disponho|encontrei|encontro|posso|consegui|fontes)\b",
    r"\b(?:ik|mij|documenten|bronnen)\b",
    r"我|文档|上下文|来源",
)
# Every family a text is searched for, narrowed to that text by one scan of it.
CUE_FAMILIES = Alternations(_CUES, _SOFT_CUES, _ANCHOR, _NEGATION, _KNOWING)
_SENTENCE = re.compile(r"[^.!?\n。！？]+")
_CLAUSE_SPLIT = re.compile(
    r"[;:,，；：]|\b(?:but|however|though|although|mais|aber|pero|ma|mas|maar)\b|但"
)

# "..., so they cost the same as domestic ones": an inference from the
# missing information that answers. A redirect ("so please ask HR") does not.
_INFERENCE = re.compile(r"\b(?:so|therefore|thus|hence|which means|that means|meaning)\b")
_REDIRECT_START = re.compile(
    r"\s*(?:please|you|contact|ask|check|try|consult|reach|i|we|it's best|it is best)\b"
)

_QUESTION_SENTENCES = re.compile(r"[^.!?]*[.!?]+|[^.!?]+$")

_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"'})


def is_refusal(answer_text: str) -> bool:
    """True when the answer declines to give the requested information (module docstring)."""
    text = _normalise(answer_text)
    if not text:
        return True
    if _only_questions(text):
        return True
    first_cue = _first_cue(text)
    if first_cue is None:
        return False
    return not _commits_after(text, first_cue)


def evaluate_heuristic(
    rows: Iterable[Mapping[str, Any]],
) -> tuple[float, float, int, int, int, int]:
    """``(precision, recall, tp, fp, fn, tn)`` of ``is_refusal`` on labelled rows.

    Refusal is the positive class; each row needs ``answer`` and ``refused``.
    A ratio with an empty denominator is reported as 1.0 (nothing to get wrong).
    """
    tp = fp = fn = tn = 0
    for row in rows:
        predicted = is_refusal(row["answer"])
        actual = bool(row["refused"])
        if predicted and actual:
            tp += 1
        elif predicted:
            fp += 1
        elif actual:
            fn += 1
        else:
            tn += 1
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    return precision, recall, tp, fp, fn, tn


def load_labelled_set() -> list[dict[str, Any]]:
    """The shipped labelled answers (``data/refusal_labelled.jsonl``)."""
    source = resources.files("ragproof_core.metrics.heuristics").joinpath(
        "data/refusal_labelled.jsonl"
    )
    with source.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _normalise(text: str) -> str:
    # lower(), not casefold(): casefold turns "weiß" into "weiss" and the patterns
    # are written as people spell them. ASCII text is its own NFKC form and holds no
    # curly quote, so it skips both (most answers: a third of this function's time).
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text).translate(_QUOTES)
    return " ".join(text.lower().split())


def _only_questions(text: str) -> bool:
    if "?" not in text:  # no sentence of it can end with one
        return False
    sentences = [s.strip() for s in _QUESTION_SENTENCES.findall(text) if s.strip()]
    return bool(sentences) and all(sentence.endswith("?") for sentence in sentences)


def _first_cue(text: str) -> int | None:
    """End offset of the first unhedged refusal cue, or None."""
    # Each family narrowed to what may match this text, in one scan (alternation.py).
    cues, soft, anchor, negation, knowing = CUE_FAMILIES.patterns_for(text)
    ends = []
    if cues is not None:
        ends += [m.end() for m in cues.finditer(text) if not _qualified(text, m.end())]
    if soft is not None:
        ends += [m.end() for m in soft.finditer(text) if not _contrasted(text, m.end())]
    if anchor is not None and negation is not None and knowing is not None:
        ends += _clause_cues(text, anchor, negation, knowing)
    return min(ends) if ends else None


def _clause_cues(
    text: str, anchor: re.Pattern[str], negation: re.Pattern[str], knowing: re.Pattern[str]
) -> list[int]:
    """End offsets of clauses that deny knowledge (see ``_NEGATION``); the three patterns
    are ``_ANCHOR``, ``_NEGATION`` and ``_KNOWING`` narrowed to the text."""
    ends = []
    for sentence in _SENTENCE.finditer(text):
        if not anchor.search(sentence.group()):
            continue
        start = sentence.start()
        for clause in _CLAUSE_SPLIT.split(sentence.group()):
            offset = text.index(clause, start) if clause else start
            start = offset + len(clause)
            if (
                negation.search(clause)
                and knowing.search(clause)
                and not _QUALIFIERS.search(clause)
            ):
                ends.append(offset + len(clause))
    return ends


def _qualified(text: str, end: int) -> bool:
    window = text[end : end + _QUALIFIER_WINDOW]
    stop = _CLAUSE_END.search(window)
    if stop is not None:
        window = window[: stop.start()]
    return _QUALIFIERS.search(window) is not None


def _contrasted(text: str, end: int) -> bool:
    sentence = re.split(r"[.!?\n]", text[end:], maxsplit=1)[0]
    return _CONTRAST.search(sentence) is not None


def _commits_after(text: str, start: int) -> bool:
    for match in _INFERENCE.finditer(text, start):
        rest = re.split(r"[.!?\n]", text[match.end() :], maxsplit=1)[0]
        if not _REDIRECT_START.match(rest) and _first_cue(rest) is None:
            return True
    for match in _EPISTEMIC.finditer(text, start):
        if not _ADDRESSED_TO_READER.search(text[max(0, match.start() - 16) : match.start()]):
            return True
    return False
