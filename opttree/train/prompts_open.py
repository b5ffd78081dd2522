# ruff: noqa: E501  (prompt texts: one prompt per line reads better than split strings)
"""The fourth part of the training prompt set: open, everyday assistant questions on fresh subjects.

After the third part the feature head's held-out agreement had flattened while its training
agreement kept climbing (0.66 vs 0.82 at depth 1): it was memorising the prompts it had, so what it
lacked was *new* text, not more steps. This part therefore reuses none of the earlier subject lists:
new word problems whose numbers are computed so each has a clean answer (ages, mixtures, interest,
sequences, weekdays, handshakes, truth-tellers), new maths kinds (fractions, quadratics, volumes,
statistics, integrals), about a hundred new science and engineering subjects, code that the target
must read and explain or fix, new people and ideas from history and the arts, new writing forms,
personas and scenes, and extraction from record kinds the earlier parts and the eval set do not use
(flights, invoices, measurements, citations, logs, URLs). As before no eval question is repeated
(tested) and the eval's subjects and puzzles were avoided; the few items that still sit near eval
questions (found after generation, so kept: changing a text re-labels stored shards) are listed in
docs/drafts.md.
"""

from __future__ import annotations

import random

from .prompts_broad import assemble

NAMES = ["Aiko", "Bastian", "Camila", "Dmitri", "Esther", "Femi", "Gita", "Hamid", "Ingrid", "Jonas", "Kavya", "Luca",
         "Mei", "Nadia", "Olu", "Pablo", "Qiu", "Rosa", "Samir", "Talia", "Ulrich", "Vera", "Wanjiru", "Xavier", "Yara", "Zain"]
STEP = ["Think step by step.", "Explain your reasoning.", "Show each step.", "Explain how you got the answer.", ""]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
SUSPECTS_ITEMS = ["the last biscuit", "the teacher's pen", "the window", "the garden gnome", "the trophy", "the map"]


def _q(rng, text: str) -> str:
    return f"{text} {rng.choice(STEP)}".strip()


def _reasoning(rng: random.Random) -> list[str]:
    out = []
    for _ in range(30):
        k = rng.randint(3, 15)
        name = rng.choice(NAMES)
        out.append(_q(rng, f"{name}'s mother is three times as old as {name}. In {k} years she will be twice as old as {name}. How old are they both now?"))
    for _ in range(30):
        a, b = rng.sample([2, 3, 4, 5, 6, 8, 10, 12], 2)
        out.append(_q(rng, rng.choice([
            f"One printer finishes a job in {a} hours and a second one in {b} hours. Working together, how long do they take?",
            f"A bath fills from the cold tap in {a} minutes and from the hot tap in {b} minutes. How long with both taps on?"])))
    for _ in range(30):
        start, d = rng.randint(1, 9), rng.randint(2, 7)
        kind = rng.randrange(4)
        seq = [[start + d * i for i in range(5)], [start * d ** i for i in range(5)],
               [i * i + start for i in range(1, 6)], [start + i * (i + 1) // 2 for i in range(5)]][kind]
        out.append(_q(rng, f"What number comes next in the sequence {', '.join(map(str, seq))}, ...? Describe the pattern."))
    for _ in range(25):
        day, n = rng.choice(WEEKDAYS), rng.randint(10, 400)
        out.append(_q(rng, rng.choice([f"If today is {day}, what day of the week will it be in {n} days?",
                                       f"If {n} days ago it was {day}, what day is it today?"])))
    for _ in range(20):
        n = rng.randint(4, 30)
        out.append(_q(rng, rng.choice([f"At a meeting of {n} people everyone shakes hands with everyone else once. How many handshakes are there?",
                                       f"In a league of {n} teams every team plays every other team twice. How many matches are played?",
                                       f"How many diagonals does a polygon with {n} sides have?"])))
    for _ in range(25):
        a, b, c = rng.sample(NAMES, 3)
        item = rng.choice(SUSPECTS_ITEMS)
        out.append(_q(rng, f"One of {a}, {b} and {c} broke {item}. {a} says: 'It was {b}.' {b} says: 'It was not me.' "
                           f"{c} says: 'It was not {a}.' Exactly one of them is telling the truth. Who did it?"))
    for _ in range(25):
        ball = rng.choice([5, 10, 15, 20, 25])
        diff = rng.choice([50, 100, 150, 200])
        out.append(_q(rng, f"A notebook and a pencil cost {2 * ball + diff} cents together. The notebook costs {diff} cents more than the pencil. How much does the pencil cost?"))
    for _ in range(20):
        n = rng.choice([8, 9, 12, 27])
        out.append(_q(rng, f"You have {n} coins that look the same, but one is heavier. With a balance scale, what is the smallest number of weighings that always finds it?"))
    for _ in range(25):
        names = rng.sample(NAMES, 4)
        rel = rng.choice([("runs faster than", "fastest", "slowest"), ("earns more than", "earns the most", "earns the least"),
                          ("arrived earlier than", "arrived first", "arrived last"), ("is heavier than", "is heaviest", "is lightest")])
        order = names[:]
        rng.shuffle(order)
        facts = [f"{order[i]} {rel[0]} {order[i + 1]}" for i in range(3)]
        rng.shuffle(facts)
        out.append(_q(rng, f"{'; '.join(facts)}. Who {rng.choice(rel[1:])}?"))
    for _ in range(20):
        p, q = rng.sample(["it rains", "the shop is open", "the alarm rings", "the road is icy", "the team wins", "the light is green"], 2)
        out.append(rng.choice([f"If {p}, then {q}. We know that {q}. Can we conclude that {p}? Explain.",
                               f"If {p}, then {q}. It is not true that {q}. What follows?",
                               f"Is this valid? 'If {p}, then {q}. It is not the case that {p}. So it is not the case that {q}.'"]))
    for _ in range(20):
        x, y = rng.randint(5, 40), rng.randint(5, 40)
        out.append(_q(rng, f"A shop has {x} litres of juice that is 20% orange and {y} litres that is 50% orange. If you mix them, what percentage is orange?"))
    for _ in range(15):
        out.append(_q(rng, rng.choice([f"A snail climbs {rng.randint(3, 5)} metres up a {rng.randint(10, 20)}-metre well each day and slides back 2 metres each night. On which day does it get out?",
                                       f"A lily pad doubles in size every day and covers a pond after {rng.randint(20, 60)} days. When did it cover half the pond?",
                                       f"Two candles of equal length burn out in {rng.randint(3, 5)} and {rng.randint(6, 9)} hours. Lit together, when is one twice as long as the other?"])))
    return out


def _maths(rng: random.Random) -> list[str]:
    out = []
    for _ in range(180):
        a, b, c, d = (rng.randint(2, 12) for _ in range(4))
        r1, r2 = rng.randint(-9, 9), rng.randint(-9, 9)
        p = rng.choice([1000, 2500, 5000, 800, 12000])
        data = sorted(rng.randint(1, 50) for _ in range(rng.randint(5, 8)))
        rng.shuffle(data)
        out.append(rng.choice([
            f"Add the fractions {a}/{b} and {c}/{d} and simplify the result.",
            f"What is {a}/{b} divided by {c}/{d}?",
            f"Solve the quadratic equation x^2 {'-' if r1 + r2 >= 0 else '+'} {abs(r1 + r2)}x {'+' if r1 * r2 >= 0 else '-'} {abs(r1 * r2)} = 0.",
            f"Find the volume of a cylinder with radius {a} cm and height {b} cm.",
            f"A box measures {a} cm by {b} cm by {c} cm. What are its volume and surface area?",
            f"Find the mean, median and range of these numbers: {', '.join(map(str, data))}.",
            f"Integrate {a}x^2 + {b}x + {c} with respect to x.",
            f"If {p} dollars earn {c}% simple interest per year, how much interest is earned in {d} years?",
            f"If {p} dollars grow at {c}% compound interest per year, what is the balance after {min(d, 4)} years?",
            f"A right triangle has legs of {3 * a} and {4 * a}. How long is the hypotenuse?",
            f"What is the least common multiple of {a * b} and {c * d}?",
            f"A price rose from {a * 10} to {(a + c) * 10} dollars. What was the percentage increase?",
            f"A bag has {a} red, {b} green and {c} blue marbles. What is the probability of drawing a green one?",
            f"What is the area of a trapezoid with parallel sides {a} m and {b + a} m and height {c} m?",
            f"Simplify the expression {a}(x + {b}) - {c}(x - {d}).",
            f"Write {a * 125000} and 0.000{a * 3} in scientific notation.",
            f"A car uses {a} litres of fuel per 100 km. How much fuel does a {b * 50} km trip need?",
            f"Convert {a * 15} degrees to radians.",
            f"Find the slope of the line through ({a}, {b}) and ({c}, {d + 13}).",
            f"If you flip a fair coin {min(a, 6)} times, what is the probability of getting exactly one head?",
        ]))
    return out


STEM_NEW = ["capillary action", "surface tension", "the Coriolis effect", "photovoltaic cells", "the nitrogen cycle",
            "mitochondria", "ribosomes", "stem cells", "the blood-brain barrier", "allergies", "insulin and blood sugar",
            "the microbiome in the gut", "circadian rhythms", "echolocation in bats", "bird migration", "camouflage in animals",
            "symbiosis", "invasive species", "the speed of sound", "resonance", "standing waves", "polarised light",
            "the photoelectric effect", "half-life", "isotopes", "catalytic converters", "combustion", "rust and corrosion",
            "polymers", "alloys", "crystals", "superconductors", "plasma, the fourth state of matter", "absolute zero",
            "thermal expansion", "convection currents", "heat conduction in metals", "the Richter scale", "tsunamis",
            "the jet stream", "monsoons", "tides and the Moon", "solar eclipses", "lunar phases", "comets", "neutron stars",
            "dark matter", "cosmic microwave background", "light-years", "red shift", "rocket propulsion", "orbital speed",
            "GPS satellites and relativity", "the scientific method", "control groups in experiments", "statistical significance",
            "correlation and causation", "exponential growth", "prime numbers", "the Fibonacci sequence in nature",
            "fractals", "probability", "logarithms", "vectors", "imaginary numbers", "infinity in mathematics",
            "compression of files", "error-correcting codes", "public-key cryptography", "packet switching",
            "how a CPU executes instructions", "cache memory", "floating-point numbers", "garbage collection in programming languages",
            "the difference between RAM and storage", "touchscreens", "LED lights", "electric motors", "transformers in the power grid",
            "alternating and direct current", "wind turbines", "geothermal energy", "tidal power", "carbon capture",
            "water treatment plants", "3D printing", "concrete", "suspension bridges", "arches in architecture",
            "aerodynamic lift", "jet engines", "hovercraft", "sonar", "radar", "MRI scanners", "ultrasound imaging",
            "hearing and the inner ear", "colour vision", "taste and smell", "reflexes", "muscle growth", "bone healing",
            "fever", "dehydration", "antibodies", "herd immunity", "genetic inheritance", "dominant and recessive genes",
            "CRISPR gene editing", "cloning", "fermentation", "yeast in bread", "soil erosion", "wetlands", "permafrost"]
STEM_TEMPLATES = ["What is {s}, and how does it work?", "Give a beginner-friendly explanation of {s}.", "Explain {s} using an analogy.",
                  "Write a short lesson on {s} for high-school students.", "What would a curious child want to know about {s}? Answer their questions.",
                  "Summarise the science of {s} in five bullet points.", "Describe a simple demonstration or example that illustrates {s}.",
                  "Why do scientists and engineers care about {s}?", "Explain {s}, then give two real-world examples.",
                  "Describe the history of how people came to understand {s}."]
WHAT_IF = ["the Moon disappeared", "Earth spun twice as fast", "there were no insects", "humans could photosynthesise",
           "water expanded when heated like most liquids but did not expand when it froze", "the Sun were twice as big",
           "there were no friction", "all the ice on land melted", "plants stopped producing oxygen", "the speed of light were much slower",
           "bacteria became immune to every antibiotic", "Earth had no magnetic field", "there were no clouds", "sound could travel in space"]


def _stem(rng: random.Random) -> list[str]:
    out = [tpl.format(s=s) for s in STEM_NEW for tpl in rng.sample(STEM_TEMPLATES, 3)]
    out += [rng.choice([f"What would happen if {w}?", f"Imagine {w}. What would change?", f"Scientifically, what would happen if {w}?"]) for w in WHAT_IF]
    return out


SNIPPETS = [
    ("Python", "def f(xs):\n    out = []\n    for x in xs:\n        if x not in out:\n            out.append(x)\n    return out"),
    ("Python", "def g(n):\n    return n if n < 2 else g(n - 1) + g(n - 2)"),
    ("Python", "total = 0\nfor i in range(1, 11):\n    if i % 2 == 0:\n        total += i\nprint(total)"),
    ("Python", "def avg(xs):\n    return sum(xs) / len(xs)"),
    ("Python", "words = text.split()\ncounts = {}\nfor w in words:\n    counts[w] = counts.get(w, 0) + 1"),
    ("Python", "def find(xs, target):\n    lo, hi = 0, len(xs)\n    while lo < hi:\n        mid = (lo + hi) // 2\n        if xs[mid] < target:\n            lo = mid + 1\n        else:\n            hi = mid\n    return lo"),
    ("Python", "def add_item(item, basket=[]):\n    basket.append(item)\n    return basket"),
    ("Python", "squares = [x * x for x in range(10) if x % 3 == 0]"),
    ("JavaScript", "for (var i = 0; i < 3; i++) {\n  setTimeout(() => console.log(i), 100);\n}"),
    ("JavaScript", "const total = items.reduce((sum, it) => sum + it.price * it.qty, 0);"),
    ("JavaScript", "function isEven(n) {\n  return n % 2 == 1;\n}"),
    ("C", "int sum(int *a, int n) {\n  int s = 0;\n  for (int i = 0; i <= n; i++) s += a[i];\n  return s;\n}"),
    ("Java", "String s = null;\nif (s.equals(\"yes\")) {\n  System.out.println(\"ok\");\n}"),
    ("SQL", "SELECT department, COUNT(*) FROM staff GROUP BY department HAVING COUNT(*) > 5;"),
    ("Go", "func max(a, b int) int {\n\tif a > b {\n\t\treturn a\n\t}\n\treturn b\n}"),
    ("Rust", "let v = vec![1, 2, 3];\nlet doubled: Vec<i32> = v.iter().map(|x| x * 2).collect();"),
]
SNIPPET_ASKS = ["What does this {lang} code do?\n\n{code}", "Is there a bug in this {lang} code? If so, fix it.\n\n{code}",
                "Explain this {lang} code line by line.\n\n{code}", "What is the time complexity of this {lang} code?\n\n{code}",
                "How could this {lang} code be improved?\n\n{code}", "Add comments to this {lang} code.\n\n{code}"]
TASKS_NEW = ["convert a Roman numeral to an integer", "check whether two strings are anagrams", "rotate a matrix by 90 degrees",
             "find all prime numbers below n with the sieve of Eratosthenes", "compute the power set of a list",
             "transpose a matrix", "count how many times each character appears in a string", "parse a date string in YYYY-MM-DD format",
             "capitalise the first letter of every word", "generate a random password", "check that brackets in a string are balanced",
             "compute the moving average of a list", "convert a number to binary", "find the longest word in a sentence",
             "merge two dictionaries", "chunk a list into groups of size k", "compute the dot product of two vectors",
             "find the intersection of two lists", "implement a queue using two stacks", "implement an LRU cache",
             "compute the edit distance between two strings", "find the missing number in a list from 1 to n",
             "validate a sudoku row", "count the islands in a grid of 0s and 1s", "implement depth-first search on a graph",
             "implement breadth-first search on a graph", "sort a list of people by age and then by name",
             "read a CSV file and sum one column", "retry a function call up to three times", "time how long a function takes"]
LANGS_NEW = ["Python", "JavaScript", "TypeScript", "Go", "Rust", "Java", "C#", "Ruby"]
CODE_CONCEPTS = ["list and tuple in Python", "== and === in JavaScript", "a stack and a heap in memory", "an interface and an abstract class",
                 "compiled and interpreted languages", "static and dynamic typing", "a shallow copy and a deep copy",
                 "synchronous and asynchronous code", "a library and a framework", "unit tests and integration tests",
                 "git merge and git rebase", "HTTP GET and POST", "SQL and NoSQL databases", "a thread pool and creating threads directly",
                 "mutable and immutable objects", "recursion and iteration", "an array and a linked list", "pass by value and pass by reference"]


def _coding(rng: random.Random) -> list[str]:
    out = [tpl.format(lang=lang, code=code) for lang, code in SNIPPETS for tpl in rng.sample(SNIPPET_ASKS, 4)]
    for task in TASKS_NEW:
        for lang in rng.sample(LANGS_NEW, 3):
            out.append(rng.choice([f"Write a {lang} function to {task}.", f"How do I {task} in {lang}?",
                                   f"Implement code in {lang} to {task}, and explain how it works.", f"Show a short {lang} program that can {task}."]))
    out += [rng.choice([f"What is the difference between {c}?", f"Explain the difference between {c}, with examples."]) for c in CODE_CONCEPTS]
    return out


PEOPLE = ["Marie Curie", "Leonardo da Vinci", "Ada Lovelace", "Nelson Mandela", "Confucius", "Frida Kahlo", "Ibn Battuta",
          "Mahatma Gandhi", "Isaac Newton", "Hypatia of Alexandria", "Charles Darwin", "Wangari Maathai", "Johann Sebastian Bach",
          "Simon Bolivar", "Murasaki Shikibu", "Galileo Galilei", "Harriet Tubman", "Socrates", "Mansa Musa", "Alan Turing",
          "Rosalind Franklin", "Genghis Khan", "Jane Austen", "Ludwig van Beethoven", "Cleopatra", "Nikola Tesla"]
IDEAS = ["the social contract", "stoicism", "existentialism", "the scientific revolution", "the Enlightenment", "feudalism",
         "mercantilism", "the separation of powers", "opportunity cost", "comparative advantage",
         "the tragedy of the commons", "game theory", "impressionism in painting", "the hero's journey in stories", "satire",
         "the Harlem Renaissance", "the Meiji Restoration", "the Bronze Age", "the Age of Exploration", "the abolition of slavery",
         "the invention of the compass", "the spread of Buddhism", "the Hanseatic League", "the Magna Carta", "the Ottoman Empire",
         "the Aztec capital Tenochtitlan", "the Mali Empire", "the Great Wall of China", "the Space Race", "the founding of the United Nations"]
HUM_TEMPLATES = ["Who was {x}, and why are they remembered?", "What can we learn today from {x}?", "Give a short overview of {x}.",
                 "Explain {x} to someone who has never studied history.", "What were the main consequences of {x}?",
                 "Write a short biography-style paragraph about {x}.", "What are two different ways historians view {x}?"]


def _humanities(rng: random.Random) -> list[str]:
    out = []
    for x in PEOPLE:
        out += [tpl.format(x=x) for tpl in rng.sample(HUM_TEMPLATES[:3] + HUM_TEMPLATES[5:6], 3)]
    for x in IDEAS:
        out += [tpl.format(x=x) for tpl in rng.sample(HUM_TEMPLATES[1:], 3)]
    return out


FORMS = ["a cover letter", "a wedding toast", "a bedtime story", "a motivational speech", "a travel brochure paragraph",
         "a polite complaint letter", "a company newsletter item", "a short fable with a moral", "an acrostic poem",
         "a radio advertisement", "an invitation", "a farewell message", "a sonnet", "a children's picture-book text",
         "a podcast introduction", "a recipe introduction", "a museum plaque", "a horoscope", "a eulogy for a beloved pet",
         "a LinkedIn post", "a short play scene", "a FAQ section", "a welcome message for new club members", "a postcard"]
SUBJECTS = ["a town where it never stops snowing", "a dragon who is afraid of heights", "the first day at a new job",
            "a community garden", "an old bookshop closing down", "a bicycle repair cafe", "a team that won a hard-fought game",
            "a volunteer beach clean-up", "a grandmother's secret recipe", "a new hiking trail", "a cat who runs a hotel",
            "moving to another country", "a lost dog finding its way home", "a solar-powered car", "a midnight train journey",
            "a library that lends tools", "an inventor's failed experiments", "a city festival of lanterns", "the last day of school",
            "a chess tournament", "learning to play the cello", "a village that builds a bridge together", "a friendly ghost",
            "a robot gardener", "a marathon in the rain", "a summer job at an ice-cream stand"]
STYLES = ["", " Keep it under 150 words.", " Use a humorous tone.", " Make it heartfelt.", " Write it for children.", " Use formal language."]


def _writing(rng: random.Random) -> list[str]:
    out = []
    for form in FORMS:
        for s in rng.sample(SUBJECTS, 6):
            out.append(rng.choice(["Write {f} about {s}.", "Compose {f} about {s}.", "Draft {f} on the theme of {s}.",
                                   "Could you write {f} about {s}?"]).format(f=form, s=s) + rng.choice(STYLES))
    return out


ROLES = ["a submarine captain", "a librarian in a haunted library", "a Viking trader", "a zookeeper", "a mountain guide",
         "an ancient Greek philosopher", "a barista with strong opinions about coffee", "a news anchor in the year 3000",
         "a retired superhero", "a gardener who talks to plants", "a train conductor", "a fashion designer", "a lifeguard",
         "a beekeeper", "a game show host", "a sports coach at half-time", "a tour guide on Mars", "a royal messenger",
         "a wise old tortoise", "a nervous first-time pilot", "a street magician", "a Renaissance painter", "a hotel receptionist",
         "a fortune teller", "an alien visiting Earth for the first time"]
ROLE_SITUATIONS = ["A visitor asks you for advice on their first day.", "Describe what you love most about your work.",
                   "Someone challenges you to prove your skills. Respond.", "Give a short speech to a crowd.",
                   "Explain the rules of your world to a newcomer.", "A child asks what your job is like.",
                   "Tell the story of your most embarrassing moment.", "Convince someone to join you on an adventure.",
                   "Answer a complaint from an unhappy customer.", "Share three pieces of wisdom."]


def _roleplay(rng: random.Random) -> list[str]:
    out = []
    for role in ROLES:
        for s in rng.sample(ROLE_SITUATIONS, 4):
            out.append(rng.choice(["You are {r}. {s}", "Play {r}. {s}", "Imagine you are {r}. {s} Stay in character.",
                                   "In the role of {r}: {s}"]).format(r=role, s=s))
    return out


AIRLINES = ["Nordair", "SkyLink", "Blue Heron Airways", "Coastal Jet", "Atlas Air"]
CITIES = ["Porto", "Nagoya", "Quito", "Gdansk", "Hobart", "Windhoek", "Bergen", "Valparaiso", "Tbilisi", "Halifax", "Chiang Mai", "Dakar"]
ITEMS = [("consulting hours", 85), ("laptop stands", 39), ("training sessions", 250), ("translation pages", 30),
         ("website updates", 120), ("printed posters", 12), ("delivery fees", 15), ("software licences", 99)]


def _extraction(rng: random.Random) -> list[str]:
    out = []
    for _ in range(30):
        legs = []
        for _ in range(rng.randint(2, 4)):
            a, b = rng.sample(CITIES, 2)
            legs.append(f"{rng.choice(AIRLINES)} flight {rng.choice('ABCDEFGHKLMN')}{rng.choice('XYZQRT')}{rng.randint(100, 999)} leaves {a} at {rng.randint(5, 22):02d}:{rng.choice([0, 15, 30, 45]):02d} for {b}")
        out.append(rng.choice(["From this itinerary, list each flight number with its origin, destination and departure time: ",
                               "Make a table of the flights (number, from, to, time) in: ", "Which cities appear in this itinerary, and in what order? "])
                   + "'" + "; ".join(legs) + ".'")
    for _ in range(30):
        lines = [(name, rng.randint(1, 12), price) for name, price in rng.sample(ITEMS, rng.randint(2, 4))]
        text = ", ".join(f"{q} {name} at {p} euros each" for name, q, p in lines)
        out.append(rng.choice(["Extract the line items from this invoice and compute the total: ", "List each item, quantity and unit price: ",
                               "What is the most expensive line in this invoice? "]) + f"'Invoice {rng.randint(1000, 9999)}: {text}.'")
    for _ in range(25):
        readings = [f"sample {chr(65 + i)} measured {rng.randint(5, 95) / 10} mg/L at {rng.randint(10, 35)} degrees" for i in range(rng.randint(3, 5))]
        out.append(rng.choice(["Put these lab readings into a table: ", "Which sample had the highest concentration? ",
                               "Extract the sample names and concentrations: "]) + "'" + "; ".join(readings) + ".'")
    for _ in range(25):
        refs = [f"{rng.choice(NAMES)} {rng.choice(['Ortiz', 'Berg', 'Walsh', 'Sato', 'Ncube', 'Petrov'])} ({rng.randint(1960, 2024)}), "
                f"'{rng.choice(['Notes on', 'A study of', 'Rethinking', 'The history of'])} {rng.choice(['river ecology', 'urban noise', 'bird song', 'tea trade', 'early printing'])}'"
                for _ in range(rng.randint(2, 3))]
        out.append(rng.choice(["List the authors, years and titles in these references: ", "Which of these references is the oldest? ",
                               "Format these references as a numbered list: "]) + " ".join(r + "." for r in refs))
    for _ in range(25):
        events = [f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d} {rng.choice(['ERROR', 'WARN', 'INFO'])} "
                  f"{rng.choice(['disk almost full', 'user login failed', 'backup finished', 'timeout calling payment service', 'cache cleared', 'new order received'])}"
                  for _ in range(rng.randint(3, 6))]
        out.append(rng.choice(["Extract only the ERROR lines from this log, with their times:\n", "Count the messages of each level in this log:\n",
                               "Summarise what happened in this log:\n"]) + "\n".join(events))
    for _ in range(20):
        bits = [rng.choice([f"https://{rng.choice(['docs', 'shop', 'news', 'blog'])}.example.{rng.choice(['com', 'org'])}/{rng.choice(['guide', 'sale', 'today', 'post/12'])}",
                            f"+{rng.randint(1, 99)} {rng.randint(100, 999)} {rng.randint(1000, 9999)}", f"#{rng.choice(['spring', 'launch', 'teamwork', 'recipes'])}"])
                for _ in range(4)]
        out.append(rng.choice(["Find every link, phone number and hashtag in: ", "Sort these into links, phone numbers and hashtags: "])
                   + f"'Visit {bits[0]} or call {bits[1]}, and follow {bits[2]} and {bits[3]}.'")
    return out


def build_open_prompts(seed: int = 3) -> list[str]:
    """About 2,000 prompts on subjects the earlier parts do not use, de-duplicated and shuffled
    deterministically."""
    return assemble(seed, (_reasoning, _maths, _stem, _coding, _humanities, _writing, _roleplay, _extraction))
