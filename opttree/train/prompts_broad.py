# ruff: noqa: E501  (prompt texts: one prompt per line reads better than split strings)
"""The second half of the training prompt set: the eight MT-bench-style categories.

The first half (prompts.py) is explanations, lists, writing, dialogue, advice, code and arithmetic
over a fixed topic list. Drafts trained on it alone reached τ ≈ 3.2 on held-out prompts of that set
but only ≈ 2.4 on the eval set, whose roleplay, reasoning, extraction, STEM and humanities questions
it barely covered: the gap was the data's narrowness, not the drafts' size. These generators widen
it. Nothing here copies an eval question (tests check that no prompt repeats one); subjects that the
eval set asks about are left out on purpose.
"""

from __future__ import annotations

import random

NAMES = ["Alice", "Bruno", "Chen", "Dara", "Elif", "Farid", "Greta", "Hugo", "Ines", "Jamal", "Kenji",
         "Lena", "Mateo", "Nadia", "Omar", "Paula", "Quinn", "Rosa", "Sven", "Tara", "Umar", "Vera"]
CITIES = ["Madrid", "Nairobi", "Toronto", "Osaka", "Lima", "Prague", "Sydney", "Cairo", "Dublin",
          "Seoul", "Lagos", "Vienna", "Quito", "Hanoi", "Bergen", "Porto"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December"]

WRITING_KINDS = ["a short speech", "a toast", "a friendly email", "an apology letter", "a product description",
                 "a blog introduction", "a limerick", "an invitation", "a newsletter paragraph",
                 "a motivational message", "a radio advertisement", "a press release opening"]
OCCASIONS = ["a friend's wedding", "a colleague who is retiring", "a new bakery opening", "a charity fun run",
             "a library's hundredth birthday", "a school science fair", "a company picnic",
             "a book club's first meeting", "a neighbourhood cleanup day", "a university graduation",
             "a farewell party for a coach", "a community garden", "a local jazz festival",
             "a bike repair workshop", "a museum's new dinosaur exhibit", "a city marathon"]
GENRES = ["fantasy", "science fiction", "romance", "horror", "adventure", "comedy", "historical", "fairy-tale"]
SETTINGS = ["on a night train", "in an abandoned amusement park", "on a space station", "in a desert village",
            "at a royal ball", "inside a submarine", "in a giant underground library", "during a city blackout",
            "on a frozen lake", "in a busy market", "on a pirate ship", "in a haunted hotel"]
PRODUCTS = ["noise-cancelling headphones", "a folding bicycle", "a smart doorbell", "a camping stove",
            "a board game about dragons", "an electric toothbrush", "a standing desk", "a robot vacuum",
            "a language-learning app", "a pair of hiking boots", "a solar phone charger", "a coffee grinder"]
CLAIMS = ["cities should have more bike lanes", "schools should teach cooking", "everyone should learn to swim",
          "libraries matter more than ever", "homework should be limited", "public transport should be free",
          "museums should open late at night", "children should learn a second language early",
          "people should take more walks", "offices should allow pets"]

PERSONAS = ["a pirate captain", "a museum tour guide", "an astronaut on a space station", "a grumpy old wizard",
            "a football coach at half-time", "a customer support agent", "a television news anchor",
            "a fortune teller at a fair", "a zookeeper", "a flight attendant", "a dragon guarding treasure",
            "a travel agent", "a fitness instructor", "a school librarian", "a barista in a tiny cafe",
            "a mountain guide", "an alien visiting Earth for the first time", "a medieval queen",
            "a kindergarten teacher", "a job interviewer", "a late-night radio host", "a ship's navigator",
            "a famous magician", "a tired superhero"]
PERSONA_TASKS = ["Introduce yourself to a new visitor.", "Describe a typical day in your life.",
                 "Give advice to someone who is nervous about their first day.",
                 "Tell me about the strangest thing that happened to you this week.",
                 "Convince a sceptical customer to trust you.", "Tell a short story from your past.",
                 "Explain the rules everyone must follow around you.", "Answer a child who asks what you love most."]
ROLE_OPENERS = ["You are {p}. {t} Stay in character.", "Pretend to be {p}. {t}", "Act as {p}. {t}",
                "Take the role of {p}. {t}"]

CLASSIC_PUZZLES = [
    "A bat and a ball cost 1.10 dollars in total. The bat costs one dollar more than the ball. How much does the ball cost?",
    "A patch of lily pads doubles in size every day and covers a lake in 48 days. On which day was it half covered?",
    "You have eight identical-looking balls and one is heavier. With a balance scale, how can you find it in two weighings?",
    "There are three light switches outside a closed room with one bulb inside. You may enter once. How can you tell which switch controls the bulb?",
    "How can you measure exactly 4 litres of water with only a 3-litre jug and a 5-litre jug?",
    "In a room of 23 people, why is it likely that two share a birthday?",
    "Two guards stand at two doors; one always lies and one always tells the truth. With one question, how do you find the safe door?",
    "A snail climbs 3 metres up a 10-metre wall each day and slides back 2 metres each night. When does it reach the top?",
    "If you overtake the person in second place in a race, what position are you in?",
    "A man has 17 sheep and all but 9 run away. How many are left?",
    "Why is a game show contestant better off switching doors in the Monty Hall problem?",
    "Three friends pay 30 dollars for a room, get 5 dollars back and keep 3. Where did the missing dollar go?",
    "How many times a day do the hour and minute hands of a clock point in exactly opposite directions?",
    "A rope ladder hangs over a ship's side with its bottom rung on the water. The tide rises 1 metre. How many rungs go under?",
    "Four people must cross a bridge at night with one torch; they take 1, 2, 5 and 10 minutes. What is the fastest way across?",
    "If a hen and a half lays an egg and a half in a day and a half, how many eggs do six hens lay in seven days?",
]
RELATIONS = [("finished the race before", "finished first", "finished last"),
             ("is older than", "is the oldest", "is the youngest"),
             ("arrived earlier than", "arrived first", "arrived last"),
             ("scored more points than", "scored the most", "scored the least")]

CODE_LANGS = ["Python", "JavaScript", "TypeScript", "Java", "C++", "Go", "Rust", "Ruby", "Kotlin", "C#"]
CODE_TASKS2 = ["implements binary search on a sorted list", "merges two sorted lists", "counts word frequencies in a text",
               "checks whether a string is a valid email address", "flattens a nested list",
               "finds the duplicate items in a list", "converts Celsius to Fahrenheit",
               "sums one column of a CSV file", "implements a stack with push and pop",
               "implements a queue using two stacks", "checks whether parentheses are balanced",
               "computes Fibonacci numbers with memoization", "sorts a list of records by one field",
               "removes the vowels from a string", "finds the longest word in a sentence",
               "generates a random password", "computes the greatest common divisor of two numbers",
               "transposes a matrix", "checks whether two strings are anagrams", "rotates an array by k positions",
               "implements a small least-recently-used cache", "parses a date string into its parts",
               "counts the lines in a text file", "finds the second largest number in a list"]
CODE_TEMPLATES2 = ["Write a {lang} function that {task}.", "In {lang}, write code that {task}, and explain it.",
                   "Show a {lang} snippet that {task}, with comments.", "How would you write a {lang} program that {task}?"]
CS_CONCEPTS = ["recursion", "big-O notation", "a REST API", "git branches", "unit testing", "dependency injection",
               "async and await", "SQL joins", "database indexes", "garbage collection", "a hash table",
               "a binary tree", "immutability", "caching", "a race condition", "version control",
               "object-oriented programming", "functional programming", "regular expressions", "a compiler"]
CS_TEMPLATES = ["Explain {c} to a new programmer.", "What is {c}, and why does it matter?",
                "Give a short example that shows {c}.", "What are common mistakes people make with {c}?"]
BUGGY = [
    ("Python", "def average(xs):\n    return sum(xs) / len(xs) + 1"),
    ("Python", "for i in range(1, len(items)):\n    print(items[i])"),
    ("Python", "def add_item(item, bucket=[]):\n    bucket.append(item)\n    return bucket"),
    ("JavaScript", "for (var i = 0; i < 3; i++) { setTimeout(() => console.log(i), 100); }"),
    ("Python", "if x = 5:\n    print('five')"),
    ("Python", "total = 0\nfor n in numbers:\n    total = n\nprint(total)"),
    ("JavaScript", "if (a == null || a.length = 0) { return; }"),
    ("Python", "def is_even(n):\n    return n % 2 == 1"),
]

STEM_WHY = ["do rainbows form", "is the sky blue", "does metal feel colder than wood", "does a magnet attract iron",
            "do batteries run down", "does a microwave oven heat food", "do aeroplanes stay in the air",
            "do tides rise and fall", "do stars shine", "does the Moon have phases", "does salt melt ice on roads",
            "does bread rise", "do leaves change colour in autumn", "does iron rust", "does soap remove grease",
            "does thunder follow lightning", "do we have fevers when we are sick", "do onions make us cry",
            "does a spinning top stay upright", "do cats always land on their feet"]
STEM_HOW = ["a solar panel", "a GPS receiver", "the human heart", "a vaccine", "a camera", "a touchscreen",
            "a wind turbine", "an electric motor", "a laser", "a thermos flask", "a hearing aid",
            "a nuclear power plant", "a 3D printer", "the human eye", "a rocket engine", "a smoke detector"]
STEM_PAIRS = [("mass", "weight"), ("speed", "velocity"), ("mitosis", "meiosis"), ("viruses", "bacteria"),
              ("AC current", "DC current"), ("acids", "bases"), ("conduction", "convection"),
              ("elements", "compounds"), ("genotype", "phenotype"), ("asteroids", "comets"),
              ("RAM", "disk storage"), ("kinetic energy", "potential energy")]
STEM_TEMPLATES = ["Why {w}?", "Explain to a curious teenager why {w}.", "In a few sentences, why {w}?"]

EVENTS = ["the French Revolution", "the First World War", "the invention of the printing press",
          "the American Civil War", "the Silk Road", "the Cold War", "the first Moon landing",
          "the Protestant Reformation", "the fall of the Berlin Wall", "the Meiji Restoration", "the Black Death",
          "the steam engine", "the Magna Carta", "the Mongol Empire", "the age of exploration",
          "the women's suffrage movement", "the building of the Great Wall of China", "the Olympic Games"]
THINKERS = ["Socrates", "Confucius", "Aristotle", "Immanuel Kant", "René Descartes", "Simone de Beauvoir",
            "John Locke", "Adam Smith", "Hannah Arendt", "Mary Wollstonecraft", "Marcus Aurelius", "Ibn Khaldun"]
WORKS = ["Romeo and Juliet", "Hamlet", "Don Quixote", "The Odyssey", "Pride and Prejudice", "Frankenstein",
         "The Little Prince", "Moby-Dick", "the myth of Prometheus", "the fable of the tortoise and the hare",
         "the story of King Midas", "Alice in Wonderland"]
IDEAS = ["free will", "justice", "Stoicism", "existentialism", "the social contract", "virtue ethics",
         "cultural relativism", "opportunity cost", "globalisation", "propaganda", "human rights", "the rule of law"]


def _writing(rng: random.Random) -> list[str]:
    out = [f"Write {k} for {o}." for k in WRITING_KINDS for o in rng.sample(OCCASIONS, 5)]
    out += [f"Write the opening paragraph of a {g} story set {s}." for g in GENRES for s in rng.sample(SETTINGS, 4)]
    out += [f"Write a short, honest review of {p}." for p in PRODUCTS]
    out += [f"Write a persuasive paragraph arguing that {c}." for c in CLAIMS]
    return out


def _roleplay(rng: random.Random) -> list[str]:
    return [rng.choice(ROLE_OPENERS).format(p=p, t=t) for p in PERSONAS for t in rng.sample(PERSONA_TASKS, 5)]


def _reasoning(rng: random.Random) -> list[str]:
    out = list(CLASSIC_PUZZLES)
    for _ in range(40):
        a, b, c = rng.sample(NAMES, 3)
        rel, top, bottom = rng.choice(RELATIONS)
        out.append(f"{a} {rel} {b}, and {c} {rel} {a}. Who {rng.choice([top, bottom])}? Explain.")
    for _ in range(25):
        a, b = rng.sample(NAMES, 2)
        young, k = rng.randint(3, 20), rng.randint(1, 10)
        gap = young + k  # then in k years a (young + gap) is exactly twice b (young): one clean answer
        out.append(f"{a} is {gap} years older than {b}. In {k} years {a} will be twice as old as {b}. "
                   "How old are they now?")
    for _ in range(25):
        start, step = rng.randint(1, 20), rng.randint(2, 9)
        seq = [start + i * step for i in range(5)] if rng.random() < 0.5 else [start * step ** i for i in range(4)]
        out.append(f"What comes next in the sequence {', '.join(map(str, seq))}? Explain the pattern.")
    days = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
    for _ in range(15):
        out.append(f"If today is {rng.choice(days)}, what day of the week will it be in {rng.randint(10, 400)} days?")
    for _ in range(10):
        n = rng.randint(5, 30)
        out.append(f"At a meeting of {n} people everyone shakes hands with everyone else once. How many handshakes are there?")
    return out


def _maths(rng: random.Random) -> list[str]:
    out = []
    for _ in range(180):
        a, b, c = rng.randint(2, 60), rng.randint(2, 60), rng.randint(2, 9)
        out.append(rng.choice([
            f"What is {a}/{b} + {c}/{a + 1}? Give the answer as a simplified fraction.",
            f"A triangle has a base of {a} cm and a height of {b} cm. What is its area?",
            f"A circle has a diameter of {2 * a + 2} m. Find its area and circumference.",
            f"Solve the quadratic equation x^2 - {a + b}x + {a * b} = 0.",
            f"What is the simple interest on {a * 100} dollars at {c} percent per year for {b % 10 + 2} years?",
            f"Convert {a * 5} kilometres per hour into metres per second.",
            f"Find the derivative of f(x) = {c}x^{c % 4 + 2} + {a}x - {b}.",
            f"Integrate {c}x^2 + {a} with respect to x.",
            f"What is the probability of getting exactly {c % 3 + 1} heads in {c % 3 + 3} fair coin flips?",
            f"In how many ways can you choose {c % 4 + 2} books from a shelf of {a % 9 + 7}?",
            f"Find the mean and median of {a}, {b}, {c}, {a + b} and {b + c}.",
            f"What are the greatest common divisor and least common multiple of {a * c} and {b * c}?",
            f"A car travels {a + 40} km at {b + 30} km/h. How long does the trip take?",
            f"Split {a * 12} dollars in the ratio {c}:{c + 2}. How much is each share?",
            f"Find the sum of the integers from 1 to {a * 10 + 5}.",
            f"Solve the system {c}x + y = {c * a + b} and x - y = {a - b}.",
            f"A coat is on sale for {c * 5} percent off and now costs {a * 4} dollars. What was the original price?",
            f"What is {a} squared minus {b} squared? Show a quick way to compute it.",
        ]))
    return out


def _coding(rng: random.Random) -> list[str]:
    out = [rng.choice(CODE_TEMPLATES2).format(lang=lang, task=t) for t in CODE_TASKS2
           for lang in rng.sample(CODE_LANGS, 4)]
    out += [tpl.format(c=c) for c in CS_CONCEPTS for tpl in rng.sample(CS_TEMPLATES, 2)]
    out += [f"Find and fix the bug in this {lang} code:\n```\n{code}\n```" for lang, code in BUGGY]
    out += [f"What does this {lang} code do?\n```\n{code}\n```" for lang, code in BUGGY]
    return out


def _extraction(rng: random.Random) -> list[str]:
    out = []
    items = ["a lamp", "a chair", "a rug", "a kettle", "a mirror", "a clock", "a backpack", "a toaster"]
    for _ in range(150):
        n1, n2, n3 = rng.sample(NAMES, 3)
        c1, c2 = rng.sample(CITIES, 2)
        m1, m2 = rng.sample(MONTHS, 2)
        i1, i2, i3 = rng.sample(items, 3)
        p = [rng.randint(5, 90) for _ in range(3)]
        y = rng.randint(1950, 2023)
        out.append(rng.choice([
            f"Extract every person's name from this text: '{n1} met {n2} in {c1}, and later {n3} joined them.'",
            f"List the products and their prices: 'The shop sells {i1} for {p[0]} dollars, {i2} for {p[1]} dollars and {i3} for {p[2]} dollars.'",
            f"Turn this into a JSON object with the fields name, age and city: '{n1} is {p[0]} years old and lives in {c1}.'",
            f"Find all the cities mentioned here: '{n1} flew from {c1} to {c2} in {m1}, then took a train home.'",
            f"Extract who did what, where and when: '{n2} opened a bakery in {c2} in {m2} {y}.'",
            f"Pull out every number in this sentence: 'The team ran {p[0]} km in {p[1]} days and raised {p[2] * 100} dollars.'",
            f"Classify the sentiment of this review as positive, negative or mixed: 'I bought {i1} in {m1}; it looks lovely but broke after {p[0]} days.'",
            f"Make a markdown table of the people and their cities: '{n1} lives in {c1}, {n2} in {c2} and {n3} in {rng.choice(CITIES)}.'",
            f"From this note, extract the date, time and place of the meeting: 'See you on {p[0] % 28 + 1} {m1} at {p[1] % 12 + 1} pm in the {c1} office.'",
            f"Which words in this sentence are nouns? '{n1} carried {i1} and {i2} across the busy square in {c1}.'",
        ]))
    return out


def _stem(rng: random.Random) -> list[str]:
    out = [rng.choice(STEM_TEMPLATES).format(w=w) for w in STEM_WHY for _ in range(2)]
    out += [f"How does {d} work?" for d in STEM_HOW]
    out += [f"Explain how {d} works, step by step." for d in STEM_HOW]
    out += [f"What is the difference between {a} and {b}?" for a, b in STEM_PAIRS]
    out += [f"Give an everyday example that shows the difference between {a} and {b}." for a, b in STEM_PAIRS]
    return out


def _humanities(rng: random.Random) -> list[str]:
    out = []
    for e in EVENTS:
        out += [f"What were the main causes of {e}?", f"Why was {e} important?",
                f"How did {e} change everyday life?"]
    for t in THINKERS:
        out += [f"Summarize the main ideas of {t}.", f"What would {t} say about social media?"]
    for w in WORKS:
        out += [f"What is the central theme of {w}?", f"Why is {w} still read today?"]
    for i in IDEAS:
        out += [f"Explain {i} in plain words.", f"Give an argument for and against {i}."]
    return out


def assemble(seed: int, builders) -> list[str]:
    """Run each category builder on one seeded generator, de-duplicate, then shuffle
    deterministically (so generation cut short stays mixed). Every later part is built this way."""
    rng = random.Random(seed)
    prompts = []
    for part in builders:
        prompts += part(rng)
    prompts = sorted(set(prompts))
    rng.shuffle(prompts)
    return prompts


def build_broad_prompts(seed: int = 1) -> list[str]:
    """About 1,000 prompts over writing, roleplay, reasoning, maths, coding, extraction, STEM and
    humanities."""
    return assemble(seed, (_writing, _roleplay, _reasoning, _maths, _coding, _extraction, _stem, _humanities))
