# ruff: noqa: E501  (prompt texts: one prompt per line reads better than split strings)
"""The third part of the training prompt set: more varied wording for the weakest eval categories.

After the broad half (prompts_broad.py) the feature head reached τ ≈ 3.6 on held-out training
prompts but 2.7 on the eval set, weakest on reasoning, extraction and STEM (≈ 2.35–2.45 each). The
held-out prompts share templates with the training ones; the eval questions do not. So this part
spends its effort on *variety*: extraction passages assembled from many kinds of records (timelines,
staff lists, recipes, reviews, weather, contacts, orders, schedules, results) under many phrasings,
so the head must copy from the prompt rather than recall a template; small logic and word problems of
many shapes; and a much longer list of STEM and humanities subjects. As before, no eval question is
repeated (tested) and the eval's own subjects are left out.
"""

from __future__ import annotations

import random

from .prompts_broad import MONTHS, assemble

FIRST = ["Amara", "Ben", "Chloe", "Diego", "Emma", "Fatima", "George", "Hana", "Ivan", "Julia", "Kofi", "Leila",
         "Marco", "Nina", "Oscar", "Priyanka", "Ravi", "Sofia", "Tomas", "Uma", "Victor", "Wen", "Yusuf", "Zoe",
         "Anil", "Beatriz", "Carlos", "Daniela", "Erik", "Freya", "Gustavo", "Helen", "Isaac", "Jana"]
LAST = ["Garcia", "Okafor", "Nguyen", "Schmidt", "Kowalski", "Haddad", "Silva", "Tanaka", "Murphy", "Rossi",
        "Andersen", "Mensah", "Ivanova", "Khan", "Dubois", "Park", "Costa", "Novak", "Lindqvist", "Moreau"]
TITLES = ["the head of marketing", "a senior developer", "the finance director", "an intern", "the office manager",
          "a data scientist", "the lead designer", "a support specialist", "the chief executive", "a project manager",
          "the legal counsel", "a lab technician", "the hotel manager", "a staff nurse", "the school principal"]
PLACES = ["Helsinki", "Accra", "Montreal", "Kyoto", "Bogota", "Krakow", "Perth", "Tunis", "Edinburgh", "Busan",
          "Mombasa", "Salzburg", "Cusco", "Da Nang", "Tromso", "Seville", "Auckland", "Marrakesh", "Riga", "Calgary"]
THINGS = ["museum", "theatre", "railway station", "stadium", "factory", "lighthouse", "zoo", "hospital wing",
          "public pool", "concert hall", "ferry terminal", "observatory", "town hall", "botanical garden"]
EVENTS = [("was founded", "was renamed", "was sold"), ("opened", "was extended", "was closed"),
          ("was built", "burned down", "was rebuilt"), ("was designed", "was completed", "was restored")]
FOODS = [("flour", "g"), ("sugar", "g"), ("butter", "g"), ("milk", "ml"), ("rice", "g"), ("water", "ml"),
         ("olive oil", "tablespoons"), ("garlic", "cloves"), ("onions", ""), ("tomatoes", ""), ("lentils", "g"),
         ("yoghurt", "ml"), ("honey", "teaspoons"), ("oats", "g"), ("cheese", "g"), ("spinach", "g")]
GOODS = ["notebooks", "pens", "desk lamps", "cables", "mugs", "chairs", "umbrellas", "batteries", "headsets",
         "water bottles", "printer cartridges", "staplers", "keyboards", "towels"]
PRAISE = ["Arrived quickly and works perfectly.", "Best purchase I made this year.", "Comfortable and well made.",
          "The staff were lovely and helpful.", "Tastes great and the portion was generous."]
COMPLAINTS = ["Stopped working after two days.", "The colour looks nothing like the photo.", "Far too noisy at night.",
              "The delivery was three weeks late.", "Cold food and a rude waiter."]
NEUTRAL = ["It does what the box says.", "The package contained one item.", "I used it twice this month.",
           "It comes in blue and grey.", "The shop is on the corner."]
WEATHER = ["sunny", "raining", "foggy", "snowing", "windy", "overcast", "stormy", "hailing"]
NUMBER_WORDS = ["one", "two", "three", "five", "seven"]
TEAMS = ["the Falcons", "the Rovers", "the Tigers", "the Mariners", "the Comets", "the Wolves", "the Pioneers",
         "the Harriers", "the Giants", "the Owls"]
DOMAINS = ["example.com", "mail.example", "company.test", "school.example.org", "shop.test", "lab.example.net"]
VERB_EXTRACT = ["Extract", "List", "Pull out", "Identify", "Find", "Write down", "Collect"]
FORMATS = ["as a bulleted list", "as a JSON array", "as a markdown table", "one per line", "as a numbered list",
           "as CSV with a header row", ""]


def _person(rng):
    return f"{rng.choice(FIRST)} {rng.choice(LAST)}"


def _ask(rng, what: str, text: str) -> str:
    fmt = rng.choice(FORMATS)
    fmt = f" {fmt}" if fmt else ""
    return rng.choice([
        f"{rng.choice(VERB_EXTRACT)} {what} from this text{fmt}: '{text}'",
        f"{rng.choice(VERB_EXTRACT)} {what} in the following passage{fmt}.\n\n{text}",
        f"Read this and {rng.choice(VERB_EXTRACT).lower()} {what}{fmt}:\n{text}",
        f"Here is a note: \"{text}\" {rng.choice(VERB_EXTRACT)} {what}{fmt}.",
    ])


def _timeline(rng) -> str:
    thing = rng.choice(THINGS)
    evs = rng.choice(EVENTS)
    years = sorted(rng.sample(range(1820, 2024), 3))
    days = [f"{rng.randint(1, 28)} {rng.choice(MONTHS)} {y}" for y in years]
    return (f"The {rng.choice(PLACES)} {thing} {evs[0]} on {days[0]}, {evs[1]} on {days[1]} "
            f"and {evs[2]} on {days[2]}.")


def _staff(rng) -> str:
    people = [(_person(rng), t) for t in rng.sample(TITLES, rng.randint(3, 5))]
    parts = [f"{p}, {t}" for p, t in people]
    return f"At the meeting were {', '.join(parts[:-1])} and {parts[-1]}."


def _recipe(rng) -> str:
    items = []
    for name, unit in rng.sample(FOODS, rng.randint(3, 6)):
        qty = rng.choice([50, 100, 150, 200, 250, 300, 400, 500]) if unit in ("g", "ml") else rng.randint(1, 4)
        items.append(f"{qty} {unit} {name}" if unit else f"{rng.choice(NUMBER_WORDS)} {name}")
    return f"Combine {', '.join(items[:-1])} and {items[-1]}, then bake for {rng.choice([20, 25, 35, 45])} minutes."


def _reviews(rng) -> str:
    pool = [rng.choice(PRAISE), rng.choice(COMPLAINTS), rng.choice(NEUTRAL), rng.choice(PRAISE + COMPLAINTS)]
    rng.shuffle(pool)
    return " ".join(f"Review {i + 1}: '{r}'" for i, r in enumerate(pool[: rng.randint(3, 4)]))


def _weather(rng) -> str:
    cities = rng.sample(PLACES, rng.randint(2, 4))
    bits = [f"{c} had {rng.randint(-12, 34)} degrees and was {rng.choice(WEATHER)}" for c in cities]
    return f"Yesterday {', '.join(bits[:-1])}, while {bits[-1]}."


def _contacts(rng) -> str:
    people = [(rng.choice(FIRST), rng.choice(LAST)) for _ in range(rng.randint(2, 4))]
    bits = [f"{f} {last} ({f.lower()}.{last.lower()}@{rng.choice(DOMAINS)}, phone {rng.randint(200, 999)}-{rng.randint(1000, 9999)})"
            for f, last in people]
    return f"Contacts for the project: {'; '.join(bits)}."


def _order(rng) -> str:
    goods = rng.sample(GOODS, rng.randint(2, 4))
    bits = [f"{rng.randint(2, 40)} {g} at {rng.randint(1, 60)}.{rng.choice(['00', '50', '99', '25'])} dollars each" for g in goods]
    return f"Order {rng.randint(1000, 9999)} from {_person(rng)}: {', '.join(bits)}, delivery to {rng.choice(PLACES)}."


def _schedule(rng) -> str:
    legs = []
    for a, b in zip(*[iter(rng.sample(PLACES, 4))] * 2):
        legs.append(f"the train from {a} leaves at {rng.randint(5, 22)}:{rng.choice(['05', '20', '35', '50'])} "
                    f"and reaches {b} at {rng.randint(5, 23)}:{rng.choice(['10', '25', '40', '55'])}")
    return f"On {rng.choice(MONTHS)} {rng.randint(1, 28)}, {' and '.join(legs)}."


def _results(rng) -> str:
    teams = rng.sample(TEAMS, 6)
    games = [f"{teams[i]} {rng.randint(0, 5)}, {teams[i + 1]} {rng.randint(0, 5)}" for i in (0, 2, 4)]
    return f"Saturday's results: {'; '.join(games)}."


def _minutes(rng) -> str:
    tasks = ["book the venue", "send the budget", "update the website", "order the banners", "call the supplier",
             "draft the newsletter", "fix the login bug", "collect the survey answers", "print the tickets"]
    bits = [f"{rng.choice(FIRST)} will {t} by {rng.choice(['Monday', 'Wednesday', 'Friday', 'next week', 'the 15th'])}"
            for t in rng.sample(tasks, rng.randint(2, 4))]
    return f"Minutes: the team agreed that {', '.join(bits[:-1])}, and {bits[-1]}."


RECORDS = [  # (passage builder, the things to extract from it)
    (_timeline, ["the years mentioned", "what happened to the building, in order", "how much time passed between the first and the last change"]),
    (_staff, ["everyone's surname", "who works in a leadership role", "the people grouped by seniority"]),
    (_recipe, ["the baking time", "the ingredients measured in grams", "a shopping list"]),
    (_reviews, ["the negative reviews", "the reviews that say nothing useful", "the main complaint"]),
    (_weather, ["the warmest and the coldest city", "the places where it was below freezing", "the temperature difference between the places"]),
    (_contacts, ["the names and phone numbers", "the email domains used", "each person's initials and phone"]),
    (_order, ["the items, quantities and unit prices", "the customer name and delivery city", "the order lines with their totals"]),
    (_schedule, ["the departure and arrival times for each train", "the stations", "each journey's start, end and duration"]),
    (_results, ["the winner of each match", "every team and its score", "the matches that ended in a draw, if any"]),
    (_minutes, ["the action items with their owners and deadlines", "who is responsible for what", "the deadlines"]),
]


def _extraction(rng: random.Random) -> list[str]:
    out = []
    for _ in range(520):
        build, whats = rng.choice(RECORDS)
        out.append(_ask(rng, rng.choice(whats), build(rng)))
    for _ in range(60):
        build, _whats = rng.choice(RECORDS)
        text = build(rng)
        out.append(rng.choice([f"Summarize this in one sentence: '{text}'",
                               f"Answer only from the text. {text} What is the most important fact here?",
                               f"Rewrite this as a short, clear bulleted list: {text}",
                               f"Turn this sentence into structured data with sensible field names: {text}"]))
    return out


CATEGORIES = [("dogs", "mammals", "animals"), ("roses", "flowers", "plants"), ("violins", "string instruments", "instruments"),
              ("sparrows", "birds", "animals that lay eggs"), ("squares", "rectangles", "shapes with four sides"),
              ("oaks", "trees", "living things"), ("novels", "books", "things you can read"),
              ("trout", "fish", "animals that live in water"), ("surgeons", "doctors", "people with medical training")]
PROPS = ["wear red hats", "can whistle", "live by the sea", "like jazz", "own a bicycle", "speak French", "are left-handed"]
JOBS = ["baker", "pilot", "teacher", "painter", "doctor", "farmer", "lawyer", "plumber"]
PETS = ["a cat", "a dog", "a parrot", "a rabbit", "a tortoise", "a goldfish"]
COLOURS = ["red", "blue", "green", "yellow", "white", "black"]
ODD_ONE = [["apple", "banana", "carrot", "cherry"], ["Mars", "Venus", "Moon", "Jupiter"],
           ["violin", "cello", "trumpet", "harp"], ["copper", "iron", "plastic", "silver"],
           ["Paris", "Rome", "Berlin", "Spain"], ["whale", "shark", "dolphin", "seal"], ["circle", "square", "cube", "triangle"],
           ["hammer", "saw", "drill", "paint"], ["oxygen", "water", "nitrogen", "helium"], ["eagle", "penguin", "sparrow", "robin"],
           ["July", "March", "Friday", "October"], ["sonnet", "haiku", "novel", "limerick"]]
ANALOGIES = [("glove", "hand", "sock"), ("bird", "nest", "bee"), ("painter", "brush", "writer"), ("puppy", "dog", "kitten"),
             ("hot", "cold", "tall"), ("book", "library", "painting"), ("fish", "water", "bird"), ("key", "lock", "password"),
             ("seed", "tree", "egg"), ("author", "novel", "composer"), ("thermometer", "temperature", "clock")]
FALLACIES = ["Everyone I know likes this film, so it must be the best film of the year.",
             "If we allow phones in class, soon nobody will learn anything at all.",
             "He is not a scientist, so his argument about recycling must be wrong.",
             "Ice cream sales and sunburns rise together, so ice cream causes sunburn.",
             "Either we ban cars from the city centre or the city will choke on pollution.",
             "This remedy has been used for centuries, so it must work.",
             "I flipped heads five times in a row, so the next flip will surely be tails.",
             "Nobody has proved that ghosts do not exist, so they must exist."]
RELATIVES = ["mother's brother", "father's sister", "brother's daughter", "mother's mother", "sister's son",
             "father's father's son who is not my father", "mother's sister's son", "wife's brother"]


def _reasoning(rng: random.Random) -> list[str]:
    out = []
    for a, b, c in CATEGORIES:
        out += [f"All {a} are {b}, and all {b} are {c}. Are all {a} {c}? Explain your reasoning.",
                f"All {a} are {b}. Some {b} {rng.choice(PROPS)}. Does it follow that some {a} do too? Why or why not?",
                f"No {a} are {rng.choice(['made of glass', 'invisible', 'older than the sun'])}, and every {b[:-1] if b.endswith('s') else b} here is a {a[:-1] if a.endswith('s') else a}. What can you conclude?"]
    for _ in range(40):
        n1, n2, n3 = rng.sample(FIRST, 3)
        j = rng.sample(JOBS, 3)
        out.append(f"{n1}, {n2} and {n3} are a {j[0]}, a {j[1]} and a {j[2]}, in some order. {n1} is not the {j[0]}. "
                   f"{n2} is neither the {j[0]} nor the {j[1]}. Who has which job? Explain step by step.")
    for _ in range(25):
        n1, n2, n3 = rng.sample(FIRST, 3)
        p = rng.sample(PETS, 3)
        c = rng.sample(COLOURS, 3)
        out.append(f"Three friends, {n1}, {n2} and {n3}, live in a {c[0]}, a {c[1]} and a {c[2]} house and own {p[0]}, {p[1]} and {p[2]}. "
                   f"The owner of {p[0]} lives in the {c[1]} house. {n1} lives in the {c[2]} house. {n2} owns {p[2]}. Who owns {p[0]}?")
    for _ in range(25):
        a, b = rng.sample(FIRST, 2)
        out.append(f"On an island, knights always tell the truth and knaves always lie. {a} says: '{b} and I are both knaves.' "
                   f"What are {a} and {b}?" if rng.random() < 0.5 else
                   f"On an island of truth-tellers and liars, {a} says '{b} is a liar' and {b} says '{a} and I are the same kind.' Who is what?")
    for _ in range(35):
        x, y = rng.randint(2, 9), rng.randint(3, 12)
        heads, legs = x + y, 2 * x + 4 * y
        out.append(rng.choice([
            f"A farm has chickens and goats: {heads} heads and {legs} legs in total. How many of each are there?",
            f"{rng.choice(FIRST)} can paint a fence in {x} hours and {rng.choice(FIRST)} in {y} hours. How long do they take together?",
            f"Two trains {x * y * 10} km apart travel towards each other at {x * 10} km/h and {y * 10} km/h. When do they meet?",
            f"A tank fills in {x} hours and a drain empties it in {x + y} hours. With both open, how long to fill it?",
            f"I walk {x} km north, then {y} km east, then {x} km south. How far am I from where I started, and in which direction?",
            f"A shop sells pens at {x} for {y} dollars. How much do {x * 3} pens cost, and how many can I buy with {y * 5} dollars?",
            f"{rng.choice(FIRST)} has twice as many marbles as {rng.choice(FIRST)}; together they have {3 * (x + y)}. How many does each have?",
        ]))
    for words in ODD_ONE:
        w = words[:]
        rng.shuffle(w)
        out.append(f"Which is the odd one out: {', '.join(w)}? Explain.")
    for a, b, c in ANALOGIES:
        out.append(f"Complete the analogy and explain it: {a} is to {b} as {c} is to what?")
    for f in FALLACIES:
        out.append(rng.choice([f"What is wrong with this argument? '{f}'", f"Is this reasoning sound? '{f}' Explain the flaw, if any.",
                               f"Name the logical fallacy in: '{f}'"]))
    for r in RELATIVES:
        out.append(f"What is my {r} to me? Explain.")
    for _ in range(20):
        y = rng.choice([1900, 1996, 2000, 2023, 2024, 2100, 1984, 2050, 1600, 2019])
        out.append(rng.choice([f"Is {y} a leap year? Explain the rule.", f"How many days are there in February {y}, and why?"]))
    for _ in range(20):
        a, b = sorted(rng.sample(range(2, 13), 2))
        t = rng.randint(1, a + b - 1)
        if t not in (a, b):
            out.append(f"You have a {a}-litre jug and a {b}-litre jug and a tap. How can you measure exactly {t} litres?")
    for _ in range(20):
        n = rng.randint(3, 9)
        out.append(rng.choice([f"How many different ways can {n} people stand in a line? Explain.",
                               f"A drawer has {n} red and {n + 2} blue socks. How many must I take in the dark to be sure of a matching pair?",
                               f"A book has {n * 40} pages. How many digits are printed to number all of them?"]))
    return out


STEM_SUBJECTS = ["photosynthesis", "the water cycle", "plate tectonics", "evolution by natural selection", "DNA replication",
                 "the immune system", "black holes", "the greenhouse effect", "the Doppler effect", "entropy", "osmosis",
                 "nuclear fusion in the Sun", "antibiotic resistance", "the carbon cycle", "sound waves", "electric circuits",
                 "static electricity", "friction", "buoyancy", "the periodic table", "chemical bonds",
                 "the nervous system", "blood circulation", "digestion", "the Big Bang", "gravity", "inertia",
                 "radioactive decay", "the ozone layer", "earthquakes", "volcanoes", "erosion", "the food chain",
                 "pollination", "vaccination", "the placebo effect", "machine learning", "encryption", "the internet",
                 "binary numbers", "light refraction", "lenses", "pressure", "air resistance", "the speed of light",
                 "magnetism", "electromagnets", "genetic mutations", "cell division", "the kidneys",
                 "the lungs", "sleep", "memory in the brain", "hormones", "ocean currents", "clouds", "hurricanes",
                 "glaciers", "fossils", "coral reefs", "rainforests", "deserts", "the Milky Way", "exoplanets",
                 "satellites in orbit", "the International Space Station", "renewable energy", "batteries",
                 "hydrogen fuel", "recycling plastic", "composting", "soil formation", "acid rain", "pH"]
STEM_ASK = ["Explain {s} in simple terms.", "What is {s}, and why does it matter?", "Describe {s} to a twelve-year-old.",
            "Give a short, clear explanation of {s} with an everyday example.", "What are the key facts about {s}?",
            "How would you explain {s} in three or four sentences?", "What do scientists mean by {s}?",
            "What are common misconceptions about {s}?"]
STEM_WHY = ["do we see lightning before we hear thunder", "does a balloon stick to a wall after rubbing it on hair",
            "do boats made of steel float", "does a spoon look bent in a glass of water", "does popcorn pop",
            "do our ears pop on an aeroplane", "does the sea taste salty", "do we get goosebumps", "does a candle go out under a jar",
            "do some animals hibernate", "is the ocean blue", "does hot air rise", "do plants need sunlight",
            "does milk go sour", "do we yawn", "does a compass point north", "can birds sit on power lines safely",
            "do apples turn brown after being cut", "does sweating cool us down", "do mountains have snow on top",
            "does a bicycle stay upright when moving", "do stars twinkle", "is Mars red", "do we need vitamins",
            "does sugar dissolve faster in hot tea", "do astronauts float in the space station", "do soap bubbles have colours",
            "do cuts heal", "does a kettle whistle", "do bridges have expansion joints"]
STEM_HOW = ["a bicycle gear system", "a pressure cooker", "noise-cancelling headphones", "a lock and key", "a barcode scanner",
            "an induction hob", "a hydroelectric dam", "a quartz watch", "a car's brakes", "a submarine diving and surfacing",
            "a thermostat", "a fibre-optic cable", "an X-ray machine", "a parachute", "a hot-air balloon",
            "a loudspeaker", "a microphone", "Wi-Fi", "a search engine", "a credit card payment", "a compass",
            "a seismometer", "a water filter", "a desalination plant", "an elevator", "a traffic light system",
            "a smartphone's accelerometer", "a digital thermometer", "a barometer"]
STEM_PAIRS = [("an atom", "a molecule"), ("a star", "a planet"), ("heat", "temperature"), ("a virus", "a cell"),
              ("renewable", "non-renewable energy"), ("an element", "a mixture"), ("speed", "acceleration"),
              ("a herbivore", "a carnivore"), ("nuclear fission", "nuclear fusion"), ("an artery", "a vein"),
              ("a physical change", "a chemical change"), ("hardware", "software"), ("a hurricane", "a tornado"),
              ("a meteor", "a meteorite"), ("latitude", "longitude"), ("a hypothesis", "a theory"),
              ("evaporation", "boiling"), ("a conductor", "an insulator"), ("accuracy", "precision"), ("DNA", "RNA")]


def _stem(rng: random.Random) -> list[str]:
    out = [tpl.format(s=s) for s in STEM_SUBJECTS for tpl in rng.sample(STEM_ASK, 3)]
    out += [rng.choice([f"Why {w}?", f"Can you explain why {w}?", f"What is the science behind why {w}?"]) for w in STEM_WHY]
    out += [rng.choice([f"How does {d} work?", f"Describe how {d} works.", f"Explain the working principle of {d}."]) for d in STEM_HOW]
    out += [f"What is the difference between {a} and {b}?" for a, b in STEM_PAIRS]
    out += [f"Compare {a} and {b} in a short paragraph." for a, b in STEM_PAIRS]
    return out


HISTORY = ["the Industrial Revolution", "the Renaissance", "the Roman Republic", "ancient Egypt's pyramids",
           "the Ottoman Empire", "the Inca Empire", "the Hundred Years' War", "the Scientific Revolution",
           "the abolition of slavery", "the Russian Revolution", "the Great Depression", "decolonisation in Africa",
           "the space race", "the Viking Age", "the Aztec capital Tenochtitlan", "the Enlightenment", "the Crusades",
           "the invention of the telephone", "the spread of the railway", "the founding of the United Nations",
           "the Han dynasty", "the Mughal Empire", "the Greek city-states", "the Byzantine Empire"]
CULTURE = ["folk tales", "public holidays", "wedding customs", "national cuisines", "street art", "museums",
           "oral storytelling", "architecture", "traditional clothing", "dance", "calligraphy", "board games",
           "puppet theatre", "poetry", "mythology", "proverbs"]
MYTHS = ["Pandora's box", "Sisyphus", "Narcissus", "the Trojan horse", "Orpheus and Eurydice", "Theseus and the Minotaur",
         "the boy who cried wolf", "the emperor's new clothes", "the ant and the grasshopper", "Beowulf", "Robin Hood",
         "King Arthur's round table"]
ETHICS = ["Kant's categorical imperative", "the trolley problem", "moral luck", "civil disobedience", "the veil of ignorance",
          "pacifism", "animal rights", "censorship", "privacy", "loyalty", "forgiveness", "fairness in taxation"]


def _humanities(rng: random.Random) -> list[str]:
    out = []
    for h in HISTORY:
        out += [tpl.format(h=h) for tpl in rng.sample(["What were the causes of {h}?", "Why is {h} remembered today?",
                                                        "Describe the main consequences of {h}.", "Give a short overview of {h}.",
                                                        "What can we learn from {h}?"], 3)]
    for c in CULTURE:
        out += [f"Describe the role of {c} in different cultures, with two examples.", f"Why do societies value {c}?"]
    for m in MYTHS:
        out += [f"What is the moral of {m}?", f"Retell {m} in a few sentences and explain its meaning."]
    for e in ETHICS:
        out += [f"Explain {e} in plain words.", f"What is one strong objection to {e}?"]
    return out


PERSONAS = ["a lighthouse keeper", "a Roman centurion", "a jazz musician in 1920s New Orleans", "a deep-sea diver",
            "a hotel receptionist", "a sports commentator", "a wise old tortoise", "a nervous first-time pilot",
            "an enthusiastic science teacher", "a detective in Victorian London", "a street food vendor", "a polar explorer",
            "a video game shopkeeper", "a tour guide in ancient Athens", "a gardener who talks to plants",
            "a robot learning to cook", "a royal astronomer", "a ship's cook", "a tech support hotline worker",
            "a train conductor", "a museum night guard", "a bookshop owner", "a circus ringmaster", "a yoga teacher"]
SCENES = ["A customer complains that {x}. Respond in character.", "A child asks you why {x}. Answer as you would.",
          "Welcome a group of visitors and tell them what to expect today.", "Someone asks for your best advice. Give it in character.",
          "Describe the most memorable day of your career.", "A stranger doubts that your job is hard. Reply in character.",
          "Explain one rule of your work that newcomers always break.", "Give a short speech to celebrate a colleague."]
COMPLAINT_BITS = ["the wait is too long", "the price went up", "nothing works as promised", "it is too cold in here",
                  "they were given the wrong ticket"]
WHY_BITS = ["you chose this job", "the sky changes colour at sunset", "you wear that uniform", "people should be kind"]


def _roleplay(rng: random.Random) -> list[str]:
    out = []
    for p in PERSONAS:
        for s in rng.sample(SCENES, 4):
            scene = s.format(x=rng.choice(COMPLAINT_BITS if "complains" in s else WHY_BITS))
            out.append(rng.choice([f"You are {p}. {scene}", f"Imagine you are {p}. {scene}", f"Role-play as {p}. {scene}",
                                   f"Play the part of {p}. {scene}"]))
    return out


WRITE_KINDS = ["a thank-you card", "a short poem", "a product pitch", "a two-paragraph story", "a diary entry",
               "a recipe introduction", "a job advertisement", "a postcard", "a haiku sequence", "a bedtime story",
               "a short fable", "a letter of complaint", "a tourist brochure paragraph", "a eulogy for a houseplant"]
WRITE_ABOUT = ["a rainy Sunday", "a lost umbrella", "the first snow of winter", "a robot that learns to paint",
               "a village without electricity", "an old bicycle", "a friendship between a cat and a crow",
               "moving to a new city", "a forgotten key", "a surprise birthday", "a market at dawn", "a long train journey",
               "a dog that hates walks", "a mountain village", "a broken clock", "a message in a bottle"]


def _writing(rng: random.Random) -> list[str]:
    out = [rng.choice([f"Write {k} about {a}.", f"Compose {k} about {a}.", f"Draft {k} about {a}."])
           for k in WRITE_KINDS for a in rng.sample(WRITE_ABOUT, 4)]
    out += [f"Write a catchy slogan and a short pitch for {g}." for g in ["a bakery that delivers by bike", "a language app for pets",
            "a quiet coworking space", "a second-hand bookshop", "an electric scooter", "a plant-sitting service"]]
    return out


CODE_LANGS = ["Python", "JavaScript", "Go", "Rust", "Java", "C"]
CODE_TASKS = ["reverse a linked list", "check whether a number is prime", "find the most common element in a list",
              "validate a phone number with a regular expression", "read a JSON file and print one field",
              "compute the factorial of n iteratively", "merge two dictionaries", "count the vowels in a string",
              "remove duplicates while keeping order", "convert a Roman numeral to an integer",
              "find all pairs in a list that sum to a target", "capitalise the first letter of every word",
              "compute a moving average", "check whether a string is a palindrome", "split a list into chunks of size k"]
SQL_TASKS = ["find the average salary per department from a table employees(name, department, salary)",
             "list the products that have never been ordered, from products(id, name) and orders(product_id, qty)",
             "count the orders per month from orders(id, created_at, total)",
             "find students with a grade above the class average from grades(student, course, grade)",
             "delete duplicate rows from a table emails(id, address), keeping the lowest id"]


def _coding(rng: random.Random) -> list[str]:
    out = [rng.choice([f"Write a {lang} function to {t}.", f"How do I {t} in {lang}? Show code.",
                       f"Give a short {lang} example that shows how to {t}."])
           for t in CODE_TASKS for lang in rng.sample(CODE_LANGS, 3)]
    out += [f"Write a SQL query to {t}." for t in SQL_TASKS]
    out += [f"Write a Bash one-liner to {t}." for t in ["count the files in a folder", "find the largest file in a directory",
            "replace a word in every .txt file", "show the ten most used commands in your history"]]
    return out


def build_varied_prompts(seed: int = 2) -> list[str]:
    """About 1,500 prompts weighted towards extraction, reasoning and STEM, de-duplicated and shuffled
    deterministically."""
    return assemble(seed, (_extraction, _reasoning, _stem, _humanities, _roleplay, _writing, _coding))
