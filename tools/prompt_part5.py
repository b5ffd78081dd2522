"""Writes the fifth part of the training prompts (appended once to opttree/assets/prompts/train.jsonl).

Part 5 is about *form* rather than subject: the earlier parts ask questions; this one hands the model
text to work on (summarise, translate, rewrite, answer from a passage, continue), asks for answers of
set shapes and lengths (one sentence, three bullets, a table, a long step-by-step guide), and asks
for code of kinds the earlier parts have little of (SQL over a given schema, regular expressions,
shell one-liners, tests, translation between languages). It was written without reading the eval
or final sets, per item or per category (docs/drafts.md, "the rule"). The frozen file is the truth:
this script documents how its lines were made and refuses to write them twice.

    python tools/prompt_part5.py            # appends part 5 (once)
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRAIN = ROOT / "opttree" / "assets" / "prompts" / "train.jsonl"
PART = 5
SEED = 5
HELDOUT_SHARE = 0.04

PASSAGES = [
    "The town of Marlow Creek built its first library in 1911 with money raised at a series of summer fairs. "
    "The building had one reading room and a coal stove, and the librarian lived upstairs. In 1968 a flood "
    "damaged the lower shelves, and volunteers dried more than two thousand books on washing lines across the "
    "main street. Today the library lends tools and seeds as well as books.",
    "Honeybees communicate the location of food with a movement called the waggle dance. A forager returning "
    "to the hive walks in a figure-eight pattern, and the angle of the straight run tells the others the "
    "direction of the flowers relative to the sun. The length of the run tells them how far away the food is.",
    "Our team switched from weekly status meetings to a shared written update every Friday. Each person writes "
    "three lines: what they finished, what they are working on, and what is blocking them. Meetings are now "
    "held only when a blocker needs a discussion. After two months, people report spending about three fewer "
    "hours a week in meetings, although some miss the chance to chat.",
    "A sourdough starter is a mixture of flour and water that captures wild yeast and bacteria from the air and "
    "the flour itself. It must be fed regularly with fresh flour and water. A healthy starter doubles in size "
    "within a few hours of feeding and smells pleasantly sour. Bakers often keep one for years.",
    "The Northway bus line will change its timetable on 3 March. Buses will run every 12 minutes instead of "
    "every 15 during the morning peak, but the last evening bus will leave the central station at 22:40 "
    "instead of 23:30. The stop at Elm Road will close for six weeks while the pavement is rebuilt.",
    "Lichens are not single organisms but partnerships between a fungus and an alga or a cyanobacterium. The "
    "fungus provides structure and protection, while the partner makes food through photosynthesis. Lichens "
    "grow very slowly, sometimes less than a millimetre a year, and can survive on bare rock where few other "
    "living things can.",
    "Customer review: I bought the Aria desk lamp for my home office. The light is bright and the colour can be "
    "adjusted from warm to cool, which I love. However, the touch controls are too sensitive and the lamp "
    "often turns on when I brush past it. Assembly took five minutes. Overall I would give it four stars.",
    "In the small coastal village where I grew up, the fishing boats came back at dawn and the whole harbour "
    "smelled of diesel and salt. My grandfather mended nets on the quay, and he taught me to tie a bowline "
    "before I could ride a bicycle. When the fish factory closed, most of the young people moved away.",
    "Regular stretching can improve flexibility, but research suggests that static stretching immediately "
    "before a sprint may slightly reduce performance. Many coaches now recommend a dynamic warm-up, such as "
    "leg swings and light jogging, before exercise, and static stretching afterwards.",
    "The city council has approved a pilot scheme that closes three streets in the old town to cars on "
    "Sundays from May to September. Shop owners are divided: cafes expect more customers, while some "
    "retailers worry that deliveries will be harder. The council will review the scheme in October.",
    "Glass is made by melting sand, soda ash and limestone at around 1,500 degrees Celsius. When the molten "
    "mixture cools quickly it does not form crystals, so the atoms stay in a disordered arrangement. That is "
    "why glass is transparent and breaks with smooth, curved edges.",
    "Meeting notes, 14 June: Priya will finish the budget draft by Wednesday. Tom reported that the supplier "
    "has delayed the order of chairs by two weeks. The team agreed to move the open day from 28 June to 5 "
    "July. Next meeting: Monday at 10:00 in room B.",
    "The Atacama Desert in Chile is one of the driest places on Earth; some weather stations there have never "
    "recorded rain. Its high altitude and clear skies make it one of the best places in the world for "
    "astronomy, and several large telescopes are built on its mountains.",
    "I started learning the cello at forty-five. For the first month every note sounded like a creaking door. "
    "My teacher told me to practise for twenty minutes a day rather than two hours on Sunday, and slowly the "
    "sound improved. Last week I played a simple minuet for my family, and nobody left the room.",
    "Composting turns kitchen scraps and garden waste into a rich soil improver. A good compost heap needs a "
    "mix of green materials, such as vegetable peelings and grass cuttings, and brown materials, such as dry "
    "leaves and cardboard. Turning the heap every few weeks adds air and speeds up decomposition.",
    "The museum's new exhibition shows everyday objects from the 1950s: radios, kitchen gadgets, school "
    "uniforms and toys. Visitors can sit in a reconstructed living room and listen to recordings of radio "
    "programmes from the time. The exhibition runs until the end of January and entry is free for children.",
    "Password managers store all of a person's passwords in an encrypted vault protected by one master "
    "password. This lets people use long, unique passwords for every website without remembering them. The "
    "main risk is that the master password must be strong and never reused anywhere else.",
    "The old stone bridge over the River Tam was built in 1742 and carried horse-drawn carts for two "
    "centuries. After cracks appeared in 2019, engineers closed it to traffic. It has now been repaired with "
    "lime mortar that matches the original and reopened for pedestrians and cyclists only.",
    "Octopuses have three hearts and blue blood. Two hearts pump blood through the gills, and the third pumps "
    "it to the rest of the body. Their blood contains a copper-based protein that carries oxygen well in "
    "cold water with little oxygen.",
    "Email from a manager: Hi all, from next month we will trial a four-day working week for the design "
    "team. Hours will stay the same in total, so each working day will be slightly longer. Please send me "
    "any concerns by Friday, and we will meet to discuss the details next Tuesday.",
    "Tea was first drunk in China, and for centuries it was pressed into bricks that could be traded and even "
    "used as money. When tea reached Europe in the seventeenth century, it was so expensive that it was "
    "kept in locked wooden boxes called caddies.",
    "Our school garden club grew potatoes, beans and sunflowers this year. The tallest sunflower reached 2.9 "
    "metres. We sold the potatoes at the autumn fair and raised enough money to buy a second water butt and "
    "new gloves for the younger pupils.",
    "Noise-cancelling headphones use small microphones to measure the sound around the listener. A chip then "
    "creates a sound wave that is the exact opposite of the incoming noise, and the two waves cancel each "
    "other out. This works best for steady, low sounds such as engine hum.",
    "The hiking trail to Crow Lake is 9 kilometres long and climbs 600 metres. The path is rocky after the "
    "second bridge, so walking boots are recommended. There is no drinking water along the route, and the "
    "car park at the start fills up before 9 a.m. at weekends.",
    "Volcanic soil is often very fertile because the ash contains minerals such as potassium and phosphorus. "
    "That is one reason why people have farmed the slopes of active volcanoes for thousands of years, "
    "despite the danger of eruptions.",
    "After the storm, the neighbours came out with shovels and chainsaws. Within an hour they had cleared the "
    "fallen oak from the lane, and someone had set up a table with flasks of soup. Nobody had organised it; "
    "it simply happened.",
    "A new study followed 2,000 adults for ten years and found that those who walked at least 7,000 steps a "
    "day had a lower risk of heart disease than those who walked fewer than 4,000. The researchers note "
    "that the study shows a link, not proof that walking causes the benefit.",
    "Product description: The TrailMate water filter removes 99.9% of bacteria and weighs only 85 grams. It "
    "screws onto standard bottles and filters up to 1,000 litres before the cartridge needs replacing. It "
    "does not remove viruses or chemicals.",
    "In medieval Europe, many towns held a weekly market on a fixed day, and the right to hold one was granted "
    "by the king or a lord. Markets brought traders, news and taxes to a town, so the right was valuable and "
    "towns often fought over it.",
    "The recycling centre will accept electrical items, batteries and garden waste, but not household "
    "rubbish. From April, visitors will need to book a time slot online. Vans and trailers are allowed only "
    "on Tuesdays and Thursdays.",
]

SUMMARY_TASKS = [
    "Summarise this in one sentence:\n\n{p}",
    "Summarize the following text in two sentences.\n\n{p}",
    "Give me the three key points of this text as bullet points.\n\n{p}",
    "Write a short headline for this:\n\n{p}",
    "Explain this text to a ten-year-old.\n\n{p}",
    "Rewrite this text in a more formal style.\n\n{p}",
    "Rewrite this as a friendly social media post of no more than 50 words.\n\n{p}",
    "What is the main idea of this paragraph?\n\n{p}",
    "List every number mentioned in this text and what it refers to.\n\n{p}",
    "Write three questions a reader might ask after reading this, and answer them from the text.\n\n{p}",
    "Turn this text into a short quiz with three multiple-choice questions.\n\n{p}",
    "Read the text and say whether its tone is positive, negative or neutral. Explain why.\n\n{p}",
    "Continue this text with one more paragraph in the same style.\n\n{p}",
    "Text: {p}\n\nWrite a title and a one-line summary for it.",
    "Here is a paragraph:\n{p}\n\nRewrite it using simpler words.",
    "{p}\n\nShorten the text above to about half its length without losing the important facts.",
    "{p}\n\nWhat information is missing from this text that a reader might want?",
    "Translate the first sentence of this text into French.\n\n{p}",
]

SENTENCES = [
    "Where is the nearest train station?",
    "I would like a table for four people at eight o'clock.",
    "The meeting has been moved to Thursday afternoon.",
    "Could you please speak a little more slowly?",
    "My suitcase did not arrive with my flight.",
    "We are closed on public holidays.",
    "The museum opens at ten and closes at six.",
    "Please remember to switch off the lights when you leave.",
    "How much does a ticket to the city centre cost?",
    "I have been learning to play the guitar for two years.",
    "The children are playing in the garden.",
    "It is going to rain tomorrow, so take an umbrella.",
    "Thank you very much for your help yesterday.",
    "Is there a pharmacy open near here?",
    "The soup is too salty.",
    "Our neighbours have a small brown dog.",
    "I forgot my password and cannot log in.",
    "The library is next to the old church.",
    "She works as a nurse at the hospital.",
    "We went swimming in the lake last summer.",
    "Can I pay by card?",
    "The train is delayed by twenty minutes.",
    "Happy birthday! I hope you have a wonderful day.",
    "He is reading a book about the history of maps.",
    "The shop sells fresh bread every morning.",
    "Turn left at the second traffic light.",
    "I am allergic to nuts.",
    "The concert was cancelled because of the storm.",
    "My brother lives in a flat on the fifth floor.",
    "Do you know a good place to eat fish?",
    "Please send me the report by Friday.",
    "The mountains are covered in snow in winter.",
    "I would like to return these shoes.",
    "What time does the last bus leave?",
    "The cat is sleeping on the sofa.",
    "We need more chairs for the guests.",
    "This room is too cold; can you close the window?",
    "The flowers in the park are beautiful in spring.",
    "I lost my keys somewhere in the house.",
    "The doctor says I should drink more water.",
]
LANGUAGES = ["French", "Spanish", "German", "Italian", "Portuguese", "Dutch", "Chinese", "Japanese",
             "Russian", "Polish", "Swedish", "Turkish"]
TRANSLATE = [
    "Translate into {lang}: {s}",
    "How do you say \"{s}\" in {lang}?",
    "Translate this sentence to {lang} and explain any word that is tricky: {s}",
    "Translate the following into {lang}, first formally and then informally: {s}",
    "I am travelling and need to say this in {lang}: \"{s}\" How do I say it?",
]
FOREIGN = [
    ("French", "Je voudrais un café et un croissant, s'il vous plaît."),
    ("French", "Nous avons visité le château pendant les vacances."),
    ("French", "Il fait beau aujourd'hui, allons au parc."),
    ("Spanish", "¿Dónde está la biblioteca?"),
    ("Spanish", "Mañana vamos a la playa con mis primos."),
    ("Spanish", "No entiendo la pregunta, ¿puedes repetirla?"),
    ("German", "Ich habe heute keine Zeit, aber morgen passt es gut."),
    ("German", "Der Zug fährt um halb neun ab."),
    ("German", "Kannst du mir bitte das Salz geben?"),
    ("Italian", "Vorrei prenotare una camera per due notti."),
    ("Italian", "La cena è pronta, venite a tavola!"),
    ("Portuguese", "Obrigado pela ajuda, foi muito gentil."),
    ("Dutch", "Ik fiets elke dag naar mijn werk."),
    ("Swedish", "Vi ses på fredag vid stationen."),
]
FROM_FOREIGN = [
    "Translate this {lang} sentence into English: {s}",
    "What does this mean in English? \"{s}\"",
    "Translate to English and explain the grammar: {s}",
]

LANGS = ["Python", "JavaScript", "TypeScript", "Java", "C#", "Go", "Rust", "C++", "Ruby", "Kotlin", "PHP",
         "Swift"]
CODE_TASKS = [
    "a function that returns the second largest number in a list",
    "a function that checks whether two strings are anagrams",
    "a function that counts how many times each word appears in a text",
    "a function that converts a number of seconds into hours, minutes and seconds",
    "a function that removes duplicate items from a list but keeps their order",
    "a function that checks whether a string is a valid IPv4 address",
    "a function that splits a list into chunks of a given size",
    "a function that returns the running total of a list of numbers",
    "a function that finds the longest word in a sentence",
    "a function that validates a simple email address",
    "a function that merges two sorted lists into one sorted list",
    "a function that returns all the dates of Mondays in a given month",
    "a small bank account type with deposit and withdraw operations",
    "a function that flattens a nested list",
    "a function that rotates a list by k positions",
    "a function that computes the median of a list",
    "a function that parses a line of CSV that may contain quoted commas",
    "a function that returns the n-th row of Pascal's triangle",
    "a function that converts a Roman numeral to an integer",
    "a simple stack with push, pop and peek",
]
CODE_FORMS = [
    "Write {task} in {lang}.",
    "Write {task} in {lang}, with a short comment on each step.",
    "In {lang}, write {task}. Then write two unit tests for it.",
    "Show me {task} in {lang} and explain its time complexity.",
    "I'm new to {lang}. How would I write {task}?",
]
SQL = [
    ("employees(id, name, department, salary, hire_date)",
     ["list the five highest-paid employees", "count the employees in each department",
      "find the employees hired in the last 30 days",
      "find the departments whose average salary is above the company average"]),
    ("orders(id, customer_id, order_date, total) and customers(id, name, city)",
     ["find the total spent by each customer", "list the customers who have never placed an order",
      "find the city with the most orders", "show each customer's most recent order date"]),
    ("books(id, title, author, year, genre) and loans(id, book_id, member_id, loan_date, return_date)",
     ["list the books that are on loan now (not yet returned)", "find the five most borrowed books",
      "count the books of each genre", "find the members who have borrowed more than three books"]),
    ("products(id, name, category, price, stock)",
     ["list the products that are out of stock", "find the most expensive product in each category",
      "compute the total value of the stock in each category", "rank the products by price within each category"]),
    ("students(id, name, class) and grades(student_id, subject, score)",
     ["find each student's average score", "list the three students with the best average score in each class",
      "find the subjects where the average score is below 50", "list the students who have no grades recorded"]),
    ("trips(id, driver_id, start_time, end_time, distance_km) and drivers(id, name, city)",
     ["find the total distance each driver has driven", "find the longest trip of each driver",
      "count the trips started on each day", "find the drivers who made no trip last week"]),
]
SHELL = [
    "find all files larger than 100 MB in my home folder",
    "count the lines in every .txt file in a folder",
    "rename all .jpeg files in a folder to .jpg",
    "show the ten largest folders under the current directory",
    "find which process is using port 8080",
    "delete log files older than 14 days",
    "search all Python files for the word TODO and show line numbers",
    "compress a folder into a .tar.gz archive",
    "show the last 50 lines of a log file and keep following it",
    "list the files changed in the last day",
]
REGEX = [
    "matches a UK-style postcode", "matches a date written as YYYY-MM-DD",
    "finds all hashtags in a tweet", "matches a 24-hour time like 09:45 or 23:10",
    "checks that a password has at least one digit and one capital letter",
    "extracts the domain from a URL", "matches a hexadecimal colour code like #1a2B3c",
    "finds repeated words such as 'the the'",
]
SNIPPETS = [
    ("Python", "def average(xs):\n    return sum(xs) / len(xs)"),
    ("JavaScript", "function last(arr) {\n  return arr[arr.length];\n}"),
    ("Python", "for i in range(len(items)):\n    if items[i] == target:\n        found = True"),
    ("Java", "public int square(int x) {\n    return x ^ 2;\n}"),
    ("Python", "counts = {}\nfor w in words:\n    counts[w] += 1"),
    ("C", "int sum(int *a, int n) {\n    int s;\n    for (int i = 0; i <= n; i++) s += a[i];\n    return s;\n}"),
    ("JavaScript", "const total = prices.reduce((a, b) => a + b);"),
    ("Go", "func isEven(n int) bool {\n    return n%2 == 1\n}"),
]
SNIPPET_TASKS = [
    "Review this {lang} code and point out any bugs:\n\n{code}",
    "Rewrite this {lang} code in {other}:\n\n{code}",
    "Add error handling to this {lang} code:\n\n{code}",
    "Write a docstring or comment explaining this {lang} code:\n\n{code}",
]

LONG_TOPICS = [
    "starting a vegetable garden on a balcony", "planning a week of cheap, healthy dinners",
    "preparing for a job interview", "learning to touch-type", "organising a small community event",
    "moving to a new city", "keeping a houseplant alive", "training for a first 5 km run",
    "setting up a budget for the first time", "choosing a second-hand bicycle",
    "writing a good cover letter", "making a family photo album", "teaching a dog to come when called",
    "reducing food waste at home", "preparing for a long-haul flight", "building a habit of reading",
    "hosting a board game evening", "learning to cook rice perfectly", "painting a room",
    "planning a camping trip for beginners", "backing up the files on a laptop",
    "making a short video for a school project", "starting to journal", "repairing a bicycle puncture",
    "decluttering a wardrobe", "getting better sleep", "making friends after moving",
    "writing a speech for a friend's wedding", "learning a language with an app", "baking bread at home",
]
LONG_FORMS = [
    "Write a detailed step-by-step guide to {t}.",
    "Give me a complete beginner's guide to {t}, with headings for each stage.",
    "Write a long, friendly blog post about {t}.",
    "What mistakes do people often make when it comes to {t}, and how can they avoid them? Give at least six.",
    "Make a checklist for {t}.",
    "In exactly three short paragraphs, explain how to go about {t}.",
    "Give me five tips for {t}, each in one sentence.",
    "Make a plan for {t} as a table with three columns: step, what to do, how long it takes.",
]

SHAPES = [
    "Sum up {x} in one sentence.",
    "Explain {x} in exactly three bullet points.",
    "Describe {x} in no more than 30 words.",
    "Give a two-column table comparing the advantages and disadvantages of {x}.",
    "Write a haiku about {x}.",
    "Write a limerick about {x}.",
    "Explain {x} as if you were a pirate.",
    "Explain {x} first for a child, then for an expert.",
    "Write a short dialogue between two friends discussing {x}.",
    "Describe {x} using only words of one syllable where you can.",
    "List ten words related to {x}.",
    "Answer yes or no, then explain: would you recommend {x} to a beginner?",
]
SHAPE_SUBJECTS = [
    "working from home", "electric scooters", "a four-day school week", "keeping chickens in a garden",
    "learning to knit", "wild swimming", "buying a used car", "solar panels on a roof",
    "a digital detox weekend", "car sharing", "a standing desk", "homemade pasta", "public libraries",
    "night trains", "fountain pens", "indoor climbing", "podcasts", "a shared office kitchen",
    "composting", "a smart doorbell", "cold showers", "jigsaw puzzles", "community gardens", "audiobooks",
]

SHORT = [
    "tea or coffee?", "best way to cool down fast", "why is my bread dense", "ideas for a rainy day",
    "a word that means very happy", "quick lunch ideas", "how to fold a shirt", "fun fact please",
    "name a few board games for two", "synonyms for important", "tips for a long drive",
    "what to pack for a beach day", "cheer me up", "a riddle please", "how to say no politely",
    "easy stretches for the back", "warm-up games for a meeting", "gift idea for a neighbour",
    "how long to boil an egg", "explain compound interest quickly",
]

WRITE_FROM = [
    "Write a polite email to my landlord asking for the broken heater to be repaired. It has not worked "
    "for a week.",
    "Write a short thank-you note to a colleague who covered my shift while I was ill.",
    "Write a message to a group chat reminding everyone that the picnic starts at noon and to bring a dish.",
    "Write an out-of-office reply for someone on holiday until 12 August.",
    "Write a short apology to a customer whose order arrived late, offering free delivery next time.",
    "Write a notice for a shared kitchen asking people to wash their own dishes, without sounding rude.",
    "Write a short speech to welcome new members to a chess club.",
    "Write a letter to a future self to be opened in ten years.",
    "Write a product description for a handmade wooden chopping board.",
    "Write a job advert for a part-time assistant at a bicycle repair shop.",
    "Write a short story of about 200 words that begins with the sentence 'The lift stopped between "
    "floors.'",
    "Write a bedtime story about a hedgehog who is afraid of the dark.",
    "Write a recipe for a simple tomato soup, with ingredients and steps.",
    "Write a review of an imaginary café that serves only soup.",
    "Write the opening paragraph of a mystery novel set on a ferry.",
    "Write a motivational message for a friend who is about to run their first marathon.",
    "Write a short poem about the first snow of winter.",
    "Write a complaint to a train company about a cancelled service, asking for a refund.",
    "Write instructions for a house-sitter: feeding the cat, watering plants and locking up.",
    "Write a toast for a grandparent's eightieth birthday.",
]
WRITE_VARIANTS = ["{w}", "{w} Keep it under 100 words.", "{w} Make it funny.", "{w} Use a warm, informal tone.",
                  "{w} Then give a shorter version."]


def distinct(texts: list[str]) -> list[str]:
    """The texts in order, each once (compared case- and space-insensitively at the ends)."""
    seen, unique = set(), []
    for text in texts:
        key = text.strip().lower()
        if key not in seen:
            seen.add(key)
            unique.append(text)
    return unique


def build(rng: random.Random) -> list[str]:
    out = []
    for p in PASSAGES:
        for t in rng.sample(SUMMARY_TASKS, 12):
            out.append(t.format(p=p))
    pairs = [(s, lang) for s in SENTENCES for lang in LANGUAGES]
    for s, lang in rng.sample(pairs, 260):
        out.append(rng.choice(TRANSLATE).format(s=s, lang=lang))
    for lang, s in FOREIGN:
        for t in FROM_FOREIGN:
            out.append(t.format(lang=lang, s=s))
    combos = [(t, lang) for t in CODE_TASKS for lang in LANGS]
    for task, lang in rng.sample(combos, 200):
        out.append(rng.choice(CODE_FORMS).format(task=task, lang=lang))
    for schema, tasks in SQL:
        tables = "tables" if " and " in schema else "table"
        for task in tasks:
            out.append(f"Given the {tables} {schema}, write an SQL query to {task}. Explain the query.")
    for task in SHELL:
        out.append(f"Give me a shell command to {task}, and explain each part.")
        out.append(f"How can I {task} on Windows PowerShell?")
    for r in REGEX:
        out.append(f"Write a regular expression that {r}, and show three strings it accepts and two it rejects.")
    for lang, code in SNIPPETS:
        for t in SNIPPET_TASKS:
            other = rng.choice([x for x in LANGS if x != lang])
            out.append(t.format(lang=lang, code=code, other=other))
    for topic in LONG_TOPICS:
        for form in rng.sample(LONG_FORMS, 5):
            out.append(form.format(t=topic))
    combos = [(s, x) for s in SHAPES for x in SHAPE_SUBJECTS]
    out += [s.format(x=x) for s, x in rng.sample(combos, 150)]
    out += SHORT
    for w in WRITE_FROM:
        for v in rng.sample(WRITE_VARIANTS, 3):
            out.append(v.format(w=w))
    unique = distinct(out)
    rng.shuffle(unique)
    return unique


def part_rows(part: int, build_texts, seed: int, rows: list[dict]) -> list[dict]:
    """The lines a new part adds after `rows`: texts already there are dropped, a seeded
    HELDOUT_SHARE of the rest is held out, ids continue the file's numbering."""
    have = {r["text"].strip().lower() for r in rows}
    rng = random.Random(seed)
    texts = [t for t in build_texts(rng) if t.strip().lower() not in have]
    held = set(rng.sample(range(len(texts)), round(HELDOUT_SHARE * len(texts))))
    return [{"id": f"tr{len(rows) + i:05d}", "part": part, "heldout": i in held, "text": text}
            for i, text in enumerate(texts)]


def frozen_rows() -> list[dict]:
    """The training prompt file's lines as they are now."""
    return [json.loads(line) for line in TRAIN.read_text(encoding="utf-8").splitlines() if line.strip()]


def append_part(part: int, build_texts, seed: int) -> None:
    """Append a new part to the frozen training prompts, once."""
    rows = frozen_rows()
    if any(r["part"] == part for r in rows):
        sys.exit(f"part {part} is already in {TRAIN}: the file is frozen data, written once.")
    new = part_rows(part, build_texts, seed, rows)
    with TRAIN.open("a", encoding="utf-8") as f:
        for row in new:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"appended {len(new)} prompts ({sum(r['heldout'] for r in new)} held out) as part {part}")


def main() -> None:
    append_part(PART, build, SEED)


if __name__ == "__main__":
    main()
