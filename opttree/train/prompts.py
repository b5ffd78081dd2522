"""The training prompt set: diverse instructions built from templates x topics (deterministic).

Categories: explanation, writing, code, maths, lists, dialogue/roleplay, advice, comparison,
extraction/rewriting. The evaluation prompts (assets/prompts/eval.jsonl) are written separately by
hand and are checked to be disjoint from this set (tests/test_drafts.py).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from .prompts_broad import build_broad_prompts
from .prompts_open import build_open_prompts
from .prompts_varied import build_varied_prompts

SCIENCE = ["photosynthesis", "black holes", "plate tectonics", "the water cycle", "vaccines",
           "DNA replication", "climate change", "the greenhouse effect", "electricity", "magnetism",
           "gravity", "evolution by natural selection", "the immune system", "volcanoes", "earthquakes",
           "the solar system", "nuclear fusion", "antibiotics", "the human heart", "ocean tides",
           "rainbows", "sound waves", "the periodic table", "chemical bonds", "cell division",
           "the speed of light", "entropy", "the Big Bang", "bacteria", "the nervous system",
           "semiconductors", "lasers", "batteries", "wind power", "solar panels", "the ozone layer",
           "digestion", "sleep", "memory in the brain", "ecosystems"]
TECH = ["the internet", "machine learning", "neural networks", "databases", "encryption",
        "cloud computing", "operating systems", "compilers", "version control with git",
        "web browsers", "recursion", "hash tables", "sorting algorithms", "binary search",
        "APIs", "blockchains", "computer viruses", "GPS", "email", "search engines", "open source software",
        "unit testing", "virtual machines", "the TCP/IP model", "passwords and hashing"]
SOCIETY = ["democracy", "inflation", "supply and demand", "the Renaissance", "the Industrial Revolution",
           "the Roman Empire", "World War I", "the printing press", "the French Revolution",
           "globalization", "taxes", "central banks", "the stock market", "human rights",
           "the Silk Road", "ancient Egypt", "the Cold War", "urbanization", "recycling",
           "public libraries", "the Olympic Games", "social media", "remote work", "minimum wage"]
EVERYDAY = ["cooking pasta", "learning a new language", "saving money", "running a marathon",
            "growing tomatoes", "keeping a houseplant alive", "planning a trip", "writing a resume",
            "preparing for a job interview", "meditation", "time management", "public speaking",
            "making friends in a new city", "studying for exams", "baking bread", "caring for a dog",
            "staying hydrated", "reducing stress", "starting a small business", "learning to swim",
            "organizing a closet", "camping", "buying a used car", "making coffee", "riding a bike"]
ALL_TOPICS = SCIENCE + TECH + SOCIETY + EVERYDAY

EXPLAIN = ["Explain {t} in simple terms.", "Can you explain how {t} works?",
           "Give a short explanation of {t} for a ten-year-old.", "What is the main idea behind {t}?",
           "Describe {t} in three paragraphs.", "Why is {t} important?",
           "Summarize what people should know about {t}.", "What are common misconceptions about {t}?",
           "Teach me the basics of {t}.", "Write a short encyclopedia-style entry about {t}."]
LISTS = ["List five interesting facts about {t}.", "Give me 7 tips for {t}.",
         "What are the pros and cons of {t}?", "List the key steps involved in {t}.",
         "Name three questions a beginner might ask about {t}, and answer them.",
         "Make a checklist for {t}.", "Give ten keywords related to {t} with one-line definitions."]
WRITING = ["Write a short poem about {t}.", "Write a haiku about {t}.", "Write a short story involving {t}.",
           "Write a persuasive paragraph about {t}.", "Write a blog post introduction about {t}.",
           "Write a tweet announcing a new book about {t}.", "Write a limerick about {t}.",
           "Write a product description for a course on {t}.", "Draft an email to a friend about {t}.",
           "Write a news headline and a short article about {t}."]
DIALOGUE = ["Write a dialogue between a teacher and a student about {t}.",
            "Pretend you are a tour guide and talk about {t}.",
            "Role-play as a scientist being interviewed about {t}.",
            "Write a conversation between two friends arguing about {t}.",
            "Act as a customer support agent answering a question about {t}.",
            "Imagine you are a pirate explaining {t}."]
ADVICE = ["I am a beginner at {t}. Where should I start?", "What mistakes should I avoid when {t}?",
          "How can I get better at {t}?", "My friend wants advice about {t}. What should I tell them?",
          "Make a one-week plan for {t}."]
COMPARE = [("Compare {a} and {b}.", 2), ("What is the difference between {a} and {b}?", 2),
           ("Which is more important, {a} or {b}? Explain your reasoning.", 2),
           ("Write a short essay connecting {a} and {b}.", 2)]

LANGS = ["Python", "JavaScript", "C", "Java", "Rust", "Go", "SQL", "Bash"]
CODE_TASKS = ["reverses a string", "checks whether a number is prime", "computes the factorial of n",
              "finds the maximum value in a list", "counts the words in a sentence",
              "sorts a list of numbers with bubble sort", "computes Fibonacci numbers",
              "checks if a string is a palindrome", "merges two sorted lists",
              "removes duplicates from a list", "converts Celsius to Fahrenheit",
              "computes the greatest common divisor of two numbers", "reads a file and counts its lines",
              "implements binary search", "finds the second largest number in an array",
              "validates an email address", "counts vowels in a string", "flattens a nested list",
              "computes the average of a list", "implements a simple stack"]
CODE = ["Write a {lang} function that {task}.", "Show me how to write code in {lang} that {task}.",
        "Explain, with a {lang} example, how to write a program that {task}."]
CODE_CONCEPTS = ["Explain what a {c} is in programming, with an example.",
                 "When should I use a {c}? Give a short code example."]
CONCEPTS = ["linked list", "dictionary", "class", "closure", "generator", "for loop", "queue",
            "binary tree", "exception", "lambda function", "regular expression", "pointer", "interface"]

def _math_prompts(rng: random.Random) -> list[str]:
    out = []
    for _ in range(220):
        a, b, c = rng.randint(2, 99), rng.randint(2, 99), rng.randint(2, 12)
        kind = rng.randrange(12)
        out.append([
            f"What is {a} plus {b}? Show your work.",
            f"Calculate {a} times {c} and explain the steps.",
            f"Solve for x: {c}x + {a} = {a + c * b}.",
            f"A shop sells pens for {c} dollars each. How much do {a} pens cost?",
            f"If a train travels {a * c} kilometers in {c} hours, what is its average speed?",
            f"What is {a}% of {b * 10}?",
            f"Is {a * b + 1} a prime number? Explain.",
            f"Find the area of a rectangle with sides {a} cm and {b} cm.",
            f"Tom has {a} apples and gives away {min(a - 1, b)}. How many are left?",
            f"What is the average of {a}, {b} and {c}?",
            f"Convert {a * 3} minutes into hours and minutes.",
            f"A recipe needs {c} eggs for {a % 6 + 2} people. How many eggs for {b % 20 + 2} people?",
        ][kind])
    return out

def _first_part(seed: int) -> list[str]:
    rng = random.Random(seed)
    prompts = []
    for t in ALL_TOPICS:
        prompts += [tpl.format(t=t) for tpl in rng.sample(EXPLAIN, 5)]
        prompts += [tpl.format(t=t) for tpl in rng.sample(LISTS, 3)]
        prompts += [tpl.format(t=t) for tpl in rng.sample(WRITING, 3)]
        prompts += [tpl.format(t=t) for tpl in rng.sample(DIALOGUE, 2)]
    for t in EVERYDAY + rng.sample(TECH, 8):
        prompts += [tpl.format(t=t) for tpl in ADVICE]
    for _ in range(200):
        a, b = rng.sample(ALL_TOPICS, 2)
        tpl, _n = rng.choice(COMPARE)
        prompts.append(tpl.format(a=a, b=b))
    for lang in LANGS:
        for task in CODE_TASKS:
            prompts.append(rng.choice(CODE).format(lang=lang, task=task))
    for c in CONCEPTS:
        prompts += [tpl.format(c=c) for tpl in CODE_CONCEPTS]
    prompts += _math_prompts(rng)
    # de-duplicate, keep a deterministic shuffled order
    prompts = sorted(set(prompts))
    rng.shuffle(prompts)
    return prompts


def prompt_parts(seed: int = 0) -> list[list[str]]:
    """The training prompts in the order they were added. Each later part is appended after the
    earlier ones (minus repeats), so generated shards keep their prompt indices, and with them the
    held-out split, across versions; `--first-prompt` generates only a new part."""
    parts, seen = [], set()
    for build in (_first_part, build_broad_prompts, build_varied_prompts, build_open_prompts):
        part = [p for p in build(seed + len(parts)) if p not in seen]
        seen.update(part)
        parts.append(part)
    return parts


def build_prompts(seed: int = 0) -> list[str]:
    return [p for part in prompt_parts(seed) for p in part]


def write_prompts(path: str | Path, seed: int = 0) -> list[str]:
    prompts = build_prompts(seed)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        for i, p in enumerate(prompts):
            f.write(json.dumps({"id": i, "prompt": p}) + "\n")
    return prompts


def read_prompts(path: str | Path) -> list[str]:
    with open(path) as f:
        return [json.loads(line)["prompt"] for line in f if line.strip()]


if __name__ == "__main__":
    ps = build_prompts()
    print(len(ps))
    for p in ps[:15]:
        print(p)
