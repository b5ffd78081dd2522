"""Writes the sixth part of the training prompts (appended once to opttree/assets/prompts/train.jsonl).

Part 6 varies form and subject again, in directions the earlier parts have little of: data handed
over in the prompt (small tables and lists to total, rank, compare and describe), conversations to
continue or summarise, follow-ups that quote an earlier answer and ask for a change, sentences to
correct, brainstormed lists, plans under constraints, sorting items into groups, concepts from
everyday fields explained at two levels or by analogy, word problems with generated numbers
(scaling, speeds, discounts, time zones, units), code around error messages, formats and given
specifications, writing under constraints, and longer articles. It was written without reading the
eval or final sets, per item or per category (docs/drafts.md, "the rule"); a prompt sharing a run
of five words with either set is dropped mechanically, unread. The frozen file is the truth: this
script documents how its lines were made and refuses to write them twice.

    python tools/prompt_part6.py            # appends part 6 (once)
"""

from __future__ import annotations

import json
import random
import re
from functools import lru_cache

from prompt_part5 import ROOT, append_part, distinct

PART = 6
SEED = 6

PEOPLE = ["Amara", "Bence", "Chiara", "Dmitri", "Esi", "Farid", "Greta", "Hiro", "Ines", "Jonas", "Kavya",
          "Liam", "Mei", "Nuno", "Olu", "Pia", "Quentin", "Rosa", "Sami", "Tove"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]

# (title, row label, column names, value ranges) for small generated tables.
TABLES = [
    ("Monthly sales of a bakery (loaves)", "month", ["white", "rye", "sourdough"], (80, 400)),
    ("Rainfall in millimetres", "month", ["Porto", "Oslo", "Nairobi"], (5, 220)),
    ("Marks out of 100", "student", ["maths", "history", "art"], (35, 99)),
    ("Visitors to a park (thousands)", "month", ["north gate", "south gate"], (3, 40)),
    ("Hours of sleep", "day", ["Ana", "Ben"], (5, 10)),
    ("Stock in a shop", "item", ["in store", "on order", "price (EUR)"], (0, 60)),
    ("Energy use of a house (kWh)", "month", ["electricity", "gas"], (90, 900)),
    ("Goals scored", "team", ["home", "away"], (0, 31)),
    ("Books borrowed from a library", "month", ["fiction", "non-fiction", "children"], (40, 500)),
    ("Daily steps", "day", ["walker A", "walker B", "walker C"], (2000, 16000)),
    ("Weekly spending (USD)", "week", ["food", "transport", "fun"], (10, 180)),
    ("Bike rentals", "day", ["station 1", "station 2"], (12, 150)),
    ("Points in a quiz", "player", ["round 1", "round 2", "round 3"], (0, 10)),
    ("Emails received", "day", ["work", "personal", "spam"], (0, 70)),
    ("Sunflower height (cm)", "week", ["plant A", "plant B"], (5, 180)),
    ("Ticket sales at a cinema", "film", ["Friday", "Saturday", "Sunday"], (20, 320)),
]
TABLE_TASKS = [
    "Which {row} has the highest total? Show your working.",
    "Work out the average of each column.",
    "Describe the main trends in this table in three sentences.",
    "Sort the rows from largest to smallest by the first column.",
    "What is the difference between the largest and smallest value in the last column?",
    "Write a short report for a manager based on this table.",
    "Turn this table into a JSON list of objects.",
    "Which two {row}s are most similar? Explain why.",
    "What percentage of the total does the first row make up?",
    "Suggest a chart that would show this data well and say what it would look like.",
    "Find anything unusual in this data and suggest a reason for it.",
    "Add a total row and a total column to this table.",
]
ROW_NAMES = {"month": MONTHS[:6], "day": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"],
             "week": ["week 1", "week 2", "week 3", "week 4"],
             "student": PEOPLE[:5], "item": ["pens", "notebooks", "rulers", "folders", "staplers"],
             "team": ["Lions", "Hawks", "Otters", "Wolves"], "player": PEOPLE[5:10],
             "film": ["The Long Road", "Blue Harbour", "Night Train", "Paper Moons"]}

DIALOGUES = [
    "Customer: Hi, my order arrived but one of the mugs is broken.\nAgent: I'm sorry to hear that! Could you "
    "tell me your order number?\nCustomer: It's 48213. I'd like a replacement, not a refund.",
    "Maya: Are you coming to the climbing gym tonight?\nLeo: I want to, but my shoulder still hurts from "
    "Sunday.\nMaya: We could just do easy routes.\nLeo: Maybe. What time are you going?",
    "Student: I don't understand why we need to learn fractions.\nTeacher: Have you ever shared a pizza?\n"
    "Student: Yes, but I just cut it.\nTeacher: Exactly. How did you decide how big each slice was?",
    "Landlord: The plumber can come on Thursday between 9 and 12.\nTenant: I work then. Is Saturday "
    "possible?\nLandlord: He doesn't work weekends, I'm afraid.",
    "Interviewer: Tell me about a time you disagreed with a colleague.\nCandidate: In my last job, a "
    "colleague wanted to launch a feature before testing it properly.\nInterviewer: What did you do?",
    "Dad: Did you finish your homework?\nZoe: Almost. I just have the science poster left.\nDad: It's due "
    "tomorrow, isn't it?\nZoe: Yes, but it's only drawing.",
    "User: My laptop fan is really loud since yesterday.\nSupport: Has anything changed, like new software?\n"
    "User: I installed a video editor.\nSupport: Is the editor open right now?",
    "Ravi: I think we should split the bill evenly.\nJo: But I only had a salad and you had the steak and "
    "two cocktails.\nRavi: Fair point. How do you want to do it?",
    "Coach: You ran well today, but you started too fast.\nRunner: I felt great in the first lap.\nCoach: "
    "That's the trap. What was your time for the last lap?",
    "Neighbour A: Your tree is dropping leaves into my gutter again.\nNeighbour B: I'm sorry, I didn't know "
    "it was that bad.\nNeighbour A: It's blocked twice this autumn.",
    "Guest: Is breakfast included in the room price?\nReceptionist: It is, from 7 to 10 in the garden room.\n"
    "Guest: We have an early train at 6:30. Is there anything we can take with us?",
    "Sam: I got the job offer!\nAlex: Congratulations! Are you going to take it?\nSam: I don't know. It "
    "means moving to another city.",
    "Patient: I keep forgetting to take my tablets in the evening.\nPharmacist: Do you have a routine in the "
    "evening, like brushing your teeth?\nPatient: Yes, always.",
    "Manager: The client wants the report two days earlier.\nAnalyst: That's tight. The data only arrives "
    "on Monday.\nManager: Can we send a draft first?",
    "Kid: Why can't I have a dog?\nMum: Who would walk it every morning?\nKid: Me!\nMum: You didn't even "
    "feed the goldfish last week.",
    "Tourist: Excuse me, how do I get to the old harbour?\nLocal: Walk down this street to the church, then "
    "turn left.\nTourist: Is it far?",
    "Team lead: Our app crashes when users upload large photos.\nDeveloper: I saw that. The image is loaded "
    "into memory all at once.\nTeam lead: What's the quickest fix?",
    "Grandma: In my day we wrote letters.\nTeen: Letters take forever!\nGrandma: That was the point. You "
    "thought about every word.",
]
DIALOGUE_TASKS = [
    "Continue this conversation with the next two lines:\n\n{d}",
    "Summarise this conversation in one sentence:\n\n{d}",
    "Write the next reply, making it friendly and helpful:\n\n{d}",
    "What does each person want in this conversation?\n\n{d}",
    "Rewrite this conversation so it is more polite:\n\n{d}",
    "How could this conversation end well? Write an ending.\n\n{d}",
    "Read this exchange and suggest what the second speaker should say next, with a reason:\n\n{d}",
]

# An earlier request and the answer it got, then a follow-up asking for a change.
EARLIER = [
    ("Write a slogan for a bicycle repair shop.", "Fixed fast, ridden far."),
    ("Give me a name for a grey kitten.", "How about Pebble?"),
    ("Suggest a dinner with chickpeas.", "A chickpea and spinach curry with rice."),
    ("Write one line to open a wedding speech.", "I've known Tom for twenty years, and he has never once "
     "been on time, until today."),
    ("Describe autumn in one sentence.", "Autumn is the season when the trees let go and the air smells "
     "of smoke and apples."),
    ("Write a subject line for an email cancelling a meeting.", "Meeting on Thursday cancelled"),
    ("List three things to pack for a beach day.", "Sunscreen, a towel and water."),
    ("Write a two-line poem about rain.", "The rain taps softly on the glass, / and tells the town that "
     "storms will pass."),
    ("Explain what a budget is.", "A budget is a plan for how you will spend and save your money."),
    ("Give me a workout I can do at home.", "Do 3 rounds of 10 squats, 10 push-ups and a 30-second "
     "plank."),
    ("Name a good first programming language.", "Python is a good first language because its syntax is "
     "simple."),
    ("Write a thank-you note to a teacher.", "Thank you for a wonderful year. You made maths fun!"),
    ("Suggest a title for a mystery novel.", "The Silent Lighthouse"),
    ("Write a product description for a wool scarf.", "A soft, warm scarf made from pure wool."),
    ("Tell me a fun fact about owls.", "Owls cannot move their eyes, so they turn their heads instead."),
    ("Write an opening line for a story.", "The last train left without her."),
    ("Give me a tip for saving money on groceries.", "Make a list before you shop and stick to it."),
    ("Write a tweet about a new coffee shop.", "New coffee shop on Mill Street! Great flat whites and "
     "comfy chairs."),
    ("Describe a sunset.", "The sky turned orange and pink as the sun sank behind the hills."),
    ("Write a riddle.", "What has keys but can't open locks? A piano."),
]
FOLLOW_UPS = [
    "Make it shorter.", "Make it longer and more detailed.", "Make it funnier.", "Make it more formal.",
    "Give me three more options.", "Write it for a five-year-old.", "Now translate it into Spanish.",
    "Explain why you chose that.", "Make it rhyme.", "Write it as a list instead.",
    "That's too plain. Make it more vivid.", "Now do the same for a very different audience: retired people.",
]

SENTENCES_TO_FIX = [
    "Me and him goes to the market every sunday.", "Their going to there house tomorrow.",
    "The informations you gave me was very usefull.", "She don't like apples, but she like bananas.",
    "I have went to London three times last year.", "Everyone have to bring they own lunch.",
    "The dog wagged it's tail when it seen me.", "Between you and I, the plan was not good.",
    "He is more taller than his brother.", "I am agree with your opinion.",
    "We was waiting for a hour at the station.", "Less people came to the concert then we expected.",
    "The childrens played in the garden until it get dark.", "If I would have known, I would have came.",
    "She asked me where was the post office.", "Neither the teacher nor the students was ready.",
    "I seen a movie yesterday who was very scary.", "Its a long way to the coast, isnt it.",
    "The team are playing good this season.", "Could you borrow me your pen?",
    "I look forward to hear from you.", "He runned to the shop and buyed milk.",
    "The data shows that sales has increased alot.", "Me and my friends is going to the park.",
    "Despite of the rain, we went out.", "I didn't saw nobody at the door.",
    "This is the most cheapest shop in town.", "Every students must sign the form.",
    "She has been working here since three years.", "There is many reasons to learn a language.",
    "Who's book is this on the table?", "I wish I was taller when I played basketball.",
    "He explained me the rules of the game.", "The meeting was postponed to a later date in the future.",
    "Irregardless of the weather, the match will go ahead.", "The cat sat on the mat, it was sleeping.",
]
FIX_TASKS = [
    "Correct the grammar in this sentence: \"{s}\"",
    "What is wrong with this sentence, and how would you fix it? \"{s}\"",
    "Rewrite this sentence correctly and explain each change: \"{s}\"",
]

BRAINSTORM = [
    "names for a vegetable delivery service", "ways to reuse glass jars", "themes for a school dance",
    "questions to ask a new flatmate", "rainy-day activities for children", "ideas for a small balcony garden",
    "gifts under ten dollars for a coworker", "ways to make a long train journey pleasant",
    "topics for a short podcast about cooking", "names for a chess club", "ways to practise a new language daily",
    "uses for an old bicycle", "games to play at a picnic", "ways to reduce screen time in the evening",
    "ideas for a neighbourhood clean-up day", "fundraising ideas for a youth football team",
    "conversation starters at a networking event", "ways to keep a home cool without air conditioning",
    "ideas for a birthday party for a ten-year-old", "names for a fantasy tavern", "hobbies that cost nothing",
    "ways to make a small kitchen feel bigger", "challenges for a 30-day photography project",
    "ways to thank volunteers", "slogans for a tap-water campaign", "ideas for a science fair project",
    "ways to welcome a new employee", "side dishes for a barbecue", "names for a robot pet",
    "ways to make studying more fun", "excuses a cat might give for knocking things over",
    "features for a to-do list app", "ways to spend a day in a city without money",
    "questions for a quiz about space", "ways to use leftover rice", "ideas for a family board-game night",
    "first lines for a mystery story", "ways to stay warm while camping", "songs to sing on a road trip",
    "ways a library could attract teenagers", "ideas for a short film with no dialogue",
    "things to do on a first visit to a farm", "names for a hiking club", "ways to save water in a garden",
]
BRAINSTORM_FORMS = [
    "Give me {n} {x}.", "Brainstorm {n} {x}, with one line about each.", "List {n} {x} and mark your favourite.",
    "I need {n} {x}. Be creative.",
]

PLANS = [
    "a three-day trip to a mountain town for two people who do not drive",
    "a weekly meal plan for a vegetarian student with a small budget",
    "a four-week plan to go from walking to running 5 kilometres",
    "a study timetable for two exams in ten days",
    "a one-day schedule for a family visiting a large museum with two small children",
    "a plan to clear out a garage over two weekends",
    "a morning routine that takes under 30 minutes",
    "a budget for a birthday party for 15 guests with 200 dollars",
    "a plan for moving house in three weeks",
    "a seating plan for a dinner of eight people where two guests do not get along",
    "a reading plan to finish a 600-page novel in a month",
    "a schedule for painting two rooms in one weekend",
    "a plan to learn 500 words of a new language in eight weeks",
    "a packing list and timeline for a school camping trip",
    "a weekend in a rainy seaside town",
    "a plan to host a book club for the first time",
    "a training plan for a dog that pulls on the lead",
    "a week of lunches that can be made the night before",
    "a plan to save 1,000 dollars in six months on a modest income",
    "a day of sightseeing in a city by bicycle",
    "an agenda for a one-hour team meeting about a missed deadline",
    "a plan for a charity bake sale",
    "a revision plan for a driving theory test",
    "a schedule for a small music festival with five bands",
    "a plan to start a vegetable patch in spring",
    "a calm evening routine for better sleep",
    "a two-week plan to prepare for a job interview",
    "a cleaning rota for four flatmates",
]
PLAN_FORMS = [
    "Make {p}.", "Create {p}, as a table.", "Write {p}. Keep it realistic.", "Help me with {p}, step by step.",
]

SORT_TASKS = [
    ("Sort these into fruits and vegetables", "tomato, carrot, apple, cucumber, banana, potato, pear, onion, "
     "mango, spinach"),
    ("Group these animals into mammals, birds and reptiles", "eagle, dolphin, lizard, bat, penguin, "
     "crocodile, whale, sparrow, tortoise, horse"),
    ("Which of these words are nouns, verbs or adjectives?", "run, happy, table, quickly, jump, blue, idea, "
     "write, soft, river"),
    ("Sort these inventions from oldest to newest", "the telephone, the printing press, the wheel, the "
     "internet, the steam engine, the radio"),
    ("Group these countries by continent", "Kenya, Peru, Vietnam, Norway, Canada, Egypt, Chile, Japan, "
     "Poland, Australia"),
    ("Classify these as renewable or non-renewable energy", "coal, wind, solar, natural gas, hydroelectric, "
     "oil, geothermal, nuclear"),
    ("Label each review as positive, negative or mixed", "1) Fast delivery, great quality. 2) Broke after a "
     "week. 3) Nice design but too expensive. 4) Would buy again! 5) Not what the photo showed."),
    ("Sort these by size, smallest first", "a bee, an elephant, a cat, a mouse, a horse, an ant, a dog"),
    ("Which of these are solids, liquids or gases at room temperature?", "iron, water, oxygen, mercury, "
     "salt, helium, olive oil, wood"),
    ("Group these jobs by the place people usually do them", "nurse, farmer, pilot, teacher, chef, "
     "miner, lifeguard, librarian"),
    ("Sort these numbers into prime and not prime", "2, 9, 11, 15, 17, 21, 23, 27, 29, 33"),
    ("Classify these sentences as facts or opinions", "1) Paris is in France. 2) Summer is the best season. "
     "3) Water boils at 100 degrees Celsius at sea level. 4) Cats are better than dogs. 5) The moon orbits "
     "the Earth."),
    ("Group these instruments into strings, wind and percussion", "violin, flute, drum, cello, trumpet, "
     "xylophone, harp, clarinet"),
    ("Sort these tasks by urgency for a Monday morning", "reply to a client complaint, water the plants, "
     "submit the invoice due today, plan next month's holiday, fix the broken printer"),
    ("Label each email subject as likely spam or not", "1) You have WON a free cruise!!! 2) Minutes from "
     "Tuesday's meeting 3) Your invoice #5521 4) Claim your prize now 5) Lunch on Friday?"),
    ("Sort these foods by how much protein they usually have, most first", "lentils, rice, chicken, apples, "
     "eggs, bread, tofu"),
]

CONCEPTS = [
    "compound interest", "inflation", "supply and demand", "a mortgage", "insurance premiums", "opportunity cost",
    "a credit score", "tax brackets", "a contract", "copyright", "a jury trial", "a patent",
    "offside in football", "a tie-break in tennis", "the rules of cricket", "a marathon pace strategy",
    "a major and a minor key", "rhythm and tempo", "an orchestra's sections", "harmony in music",
    "why bread rises", "why onions make you cry", "caramelisation", "emulsions like mayonnaise",
    "how a vaccine trains the body", "blood pressure", "a fever", "why we need sleep",
    "how a bill becomes law", "what a census is", "how elections are counted", "what a city council does",
    "how a thermostat works", "how a microwave heats food", "how a zip fastener works", "how a lock and key work",
    "how GPS finds your position", "how a QR code stores information", "how touch screens sense fingers",
    "how a refrigerator keeps food cold", "how solar panels make electricity", "how a lift knows where to stop",
    "how tides are caused", "why leaves change colour", "how clouds form", "why the sea is salty",
    "how bees make honey", "how birds migrate", "how a seed becomes a plant", "how fossils form",
    "what a dialect is", "how children learn to talk", "why English spelling is irregular", "what an idiom is",
    "how a map projection distorts the world", "what a time zone is", "how a library classifies books",
    "how recycling plastic works", "what a carbon footprint is", "how a dam makes electricity",
    "how an auction works", "what a franchise is", "how a start-up raises money", "what a union does",
    "how a podcast is made", "how a newspaper decides what to print", "how a film is edited",
    "how noise is measured in decibels", "what a calorie is", "how a compass works",
]
CONCEPT_FORMS = [
    "Explain {c} in two ways: first for a ten-year-old, then for an adult.",
    "Explain {c} using an everyday analogy.",
    "What are the most common misunderstandings about {c}?",
    "Give a short explanation of {c}, then one real-life example.",
    "Explain {c} in exactly five sentences.",
]

ARTICLE_TOPICS = [
    "the history of the bicycle", "why people keep diaries", "life in a lighthouse", "the science of a good "
    "night's sleep", "how street names are chosen", "the world of competitive crossword solving",
    "why some cities have trams and others do not", "the life cycle of a pair of jeans",
    "what makes a good neighbour", "how maps changed exploration", "the history of the umbrella",
    "what happens to lost luggage", "why people collect stamps", "the rise of urban beekeeping",
    "the story of the paperback book", "how postcards became popular", "what a day at a weather station "
    "is like", "the role of bridges in city life", "the history of board games", "why we celebrate "
    "birthdays", "the future of libraries", "how a town prepares for a marathon", "the history of "
    "chocolate", "why some songs get stuck in our heads", "the lives of lighthouse keepers' families",
    "the invention of the postage stamp", "how ferries connect island communities",
]
ARTICLE_FORMS = [
    "Write a detailed article of about 400 words about {t}, with a title and three sections.",
    "Write a blog post about {t} for curious teenagers.",
    "Write an encyclopedia-style entry on {t}.",
]

ERRORS = [
    ("Python", "TypeError: can only concatenate str (not \"int\") to str"),
    ("Python", "IndexError: list index out of range"),
    ("Python", "KeyError: 'name'"),
    ("Python", "ModuleNotFoundError: No module named 'requests'"),
    ("Python", "AttributeError: 'NoneType' object has no attribute 'split'"),
    ("Python", "IndentationError: unexpected indent"),
    ("Python", "ZeroDivisionError: division by zero"),
    ("Python", "RecursionError: maximum recursion depth exceeded"),
    ("JavaScript", "TypeError: Cannot read properties of undefined (reading 'length')"),
    ("JavaScript", "ReferenceError: x is not defined"),
    ("JavaScript", "SyntaxError: Unexpected token '}'"),
    ("Java", "java.lang.NullPointerException"),
    ("Java", "java.lang.ArrayIndexOutOfBoundsException: Index 5 out of bounds for length 5"),
    ("C", "Segmentation fault (core dumped)"),
    ("C++", "error: 'cout' was not declared in this scope"),
    ("Rust", "error[E0382]: borrow of moved value: `s`"),
    ("Go", "panic: runtime error: invalid memory address or nil pointer dereference"),
    ("SQL", "ERROR: column \"username\" does not exist"),
    ("Git", "fatal: not a git repository (or any of the parent directories): .git"),
    ("Bash", "Permission denied"),
    ("npm", "npm ERR! code ENOENT"),
    ("Docker", "Cannot connect to the Docker daemon. Is the docker daemon running?"),
]
ERROR_FORMS = [
    "I get this error in {lang}: `{e}`. What does it mean and how do I fix it?",
    "Explain this {lang} error to a beginner and show a small example that causes it: {e}",
]
SPECS = [
    "a class BankAccount with deposit, withdraw (refusing to go below zero) and a balance property",
    "a function that returns the n-th Fibonacci number without recursion",
    "a stack with push, pop and peek, raising an error when empty",
    "a function that checks whether a string is a valid date in YYYY-MM-DD form",
    "a function that counts the words in a text and returns the five most common",
    "a simple to-do list class with add, complete and list_open methods",
    "a function that converts Celsius to Fahrenheit and back",
    "a function that merges two dictionaries, adding values of shared keys",
    "a queue built from two stacks",
    "a function that groups a list of words by their first letter",
    "a function that flattens a nested list",
    "a rate limiter that allows at most five calls per second",
    "a function that validates a password (length, digit, capital letter)",
    "a binary search over a sorted list that returns -1 when the item is missing",
    "a function that rotates a matrix by 90 degrees",
    "a tiny command-line calculator that reads two numbers and an operator",
    "a function that returns the longest common prefix of a list of strings",
    "a class Temperature that stores a value and converts between units",
    "a function that removes duplicate items from a list while keeping the order",
    "a function that finds all pairs in a list that add up to a target",
]
SPEC_LANGS = ["Python", "JavaScript", "Java", "C#", "Go", "Rust", "TypeScript", "Kotlin", "Swift", "Ruby"]
SPEC_FORMS = [
    "Write {s} in {lang}.", "Implement {s} in {lang}, with comments.",
    "In {lang}, write {s}, and show how to use it.",
]
CONVERSIONS = [
    ("JSON", "YAML", '{"name": "Lena", "age": 31, "skills": ["python", "sql"]}'),
    ("CSV", "JSON", "city,population\nLyon,522000\nGhent,263000\nBergen,285000"),
    ("YAML", "JSON", "server:\n  host: localhost\n  port: 8080\ndebug: true"),
    ("JSON", "a Markdown table", '[{"item": "tea", "price": 3.5}, {"item": "cake", "price": 4.0}]'),
    ("XML", "JSON", "<book><title>Dune</title><year>1965</year></book>"),
    ("a Python dictionary", "a JSON string", "{'a': 1, 'b': [True, None]}"),
    ("CSV", "an SQL INSERT statement", "id,product,qty\n1,bolt,40\n2,nut,75"),
    ("a Markdown list", "HTML", "- apples\n- pears\n- plums"),
    ("INI", "JSON", "[database]\nuser = admin\ntimeout = 30"),
    ("JSON", "CSV", '[{"x": 1, "y": 2}, {"x": 3, "y": 5}]'),
]

CONSTRAINED = [
    "Write a story in exactly five sentences that uses the words {w}.",
    "Write a poem about {o} with the rhyme scheme AABB.",
    "Write a dialogue between {o} and {o2}.",
    "Describe {o} without using the letter 'e' as far as you can, then say how well you did.",
    "Write a six-word story about {o}.",
    "Write a short fable with {o} as the main character and a moral at the end.",
    "Write an advertisement for {o} as if it were a luxury product.",
    "Write a diary entry from the point of view of {o}.",
]
OBJECTS = ["a teapot", "an old umbrella", "a lighthouse", "a pair of boots", "a paper boat", "a traffic light",
           "a library card", "a snowman", "a kite", "a rusty key", "a sleepy cactus", "a lost sock",
           "a street lamp", "a wooden spoon", "a garden gnome", "an alarm clock", "a pebble", "a bus ticket"]
WORD_SETS = ["river, clock, laughter", "window, bread, storm", "ladder, secret, orange", "moon, bicycle, "
             "promise", "map, feather, silence", "bridge, violin, snow", "candle, market, dog",
             "rope, island, letter"]

NUMBER_PROBLEMS = [
    "A recipe for {a} people needs {b} grams of flour. How much flour is needed for {c} people?",
    "A train travels {d} kilometres in {h} hours. What is its average speed? How long would {e} kilometres take?",
    "A jacket costs {p} dollars and is reduced by {q} percent. What is the new price?",
    "It is {t}:00 in London. What time is it in Tokyo, which is 9 hours ahead, and in New York, 5 hours behind?",
    "How many minutes are there in {h} hours and {m} minutes? Show the steps.",
    "A room is {a} metres long and {c} metres wide. How many square metres of carpet are needed?",
    "{n} friends share a bill of {p} dollars and add a {q} percent tip. How much does each pay?",
    "A car uses {b} litres of fuel per 100 kilometres. How much fuel does a {d}-kilometre trip need?",
    "Convert {d} kilometres to miles and {b} kilograms to pounds. Show the conversion factors.",
    "A tank holds {e} litres and fills at {a} litres per minute. How long does it take to fill from empty?",
    "A shop sells pens at {a} for {b} cents. How much do {c} pens cost?",
    "If you save {p} dollars a month, how long will it take to save {e} dollars?",
    "A runner finishes {d} kilometres in {m} minutes. What is the pace per kilometre?",
    "A phone battery loses {q} percent per hour. Starting full, how much is left after {h} hours?",
]

PER_NUMBER_TEMPLATE = 7  # prompts drawn from each number-problem template


def table_text(rng: random.Random, title: str, row: str, cols: list[str], lo_hi: tuple[int, int]) -> str:
    lo, hi = lo_hi
    rows = ROW_NAMES[row]
    head = f"| {row} | " + " | ".join(cols) + " |\n|" + "---|" * (len(cols) + 1) + "\n"
    body = "".join(f"| {r} | " + " | ".join(str(rng.randint(lo, hi)) for _ in cols) + " |\n" for r in rows)
    return f"{title}:\n\n{head}{body}"


def number_problem(rng: random.Random, template: str) -> str:
    return template.format(a=rng.randint(2, 9), b=rng.choice([120, 150, 200, 250, 300, 450, 6, 7, 8]),
                           c=rng.randint(3, 14), d=rng.choice([60, 90, 120, 180, 240, 300, 420, 15, 21]),
                           h=rng.randint(2, 6), e=rng.choice([500, 750, 1200, 1500, 2400]),
                           p=rng.choice([40, 60, 85, 120, 150, 240, 300]), q=rng.choice([5, 10, 15, 20, 25, 30]),
                           t=rng.randint(6, 20), m=rng.randint(15, 59), n=rng.randint(3, 8))


def build(rng: random.Random) -> list[str]:
    out = []
    for title, row, cols, lo_hi in TABLES:
        for task in rng.sample(TABLE_TASKS, 7):
            out.append(table_text(rng, title, row, cols, lo_hi) + "\n" + task.format(row=row))
    for d in DIALOGUES:
        for task in rng.sample(DIALOGUE_TASKS, 5):
            out.append(task.format(d=d))
    for request, answer in EARLIER:
        for f in rng.sample(FOLLOW_UPS, 5):
            out.append(f"Earlier I asked: \"{request}\" You answered: \"{answer}\" {f}")
    for s in SENTENCES_TO_FIX:
        for t in rng.sample(FIX_TASKS, 2):
            out.append(t.format(s=s))
    for x in BRAINSTORM:
        for form in rng.sample(BRAINSTORM_FORMS, 2):
            out.append(form.format(n=rng.choice([5, 7, 10, 12]), x=x))
    for p in PLANS:
        for form in rng.sample(PLAN_FORMS, 3):
            out.append(form.format(p=p))
    for task, items in SORT_TASKS:
        out.append(f"{task}: {items}.")
        out.append(f"{task}, and explain any that are hard to place: {items}.")
    for c in CONCEPTS:
        for form in rng.sample(CONCEPT_FORMS, 3):
            out.append(form.format(c=c))
    for t in ARTICLE_TOPICS:
        for form in rng.sample(ARTICLE_FORMS, 2):
            out.append(form.format(t=t))
    for lang, e in ERRORS:
        for form in ERROR_FORMS:
            out.append(form.format(lang=lang, e=e))
    combos = [(s, lang) for s in SPECS for lang in SPEC_LANGS]
    for s, lang in rng.sample(combos, 120):
        out.append(rng.choice(SPEC_FORMS).format(s=s, lang=lang))
    for src, dst, data in CONVERSIONS:
        out.append(f"Convert this {src} to {dst}:\n\n{data}")
        out.append(f"Here is some {src}:\n\n{data}\n\nRewrite it as {dst} and explain the differences between "
                   f"the two formats.")
    for template in CONSTRAINED:
        for o in rng.sample(OBJECTS, 6):
            out.append(template.format(w=rng.choice(WORD_SETS), o=o, o2=rng.choice([x for x in OBJECTS if x != o])))
    for template in NUMBER_PROBLEMS:
        for _ in range(PER_NUMBER_TEMPLATE):
            out.append(number_problem(rng, template))
    unique = distinct(out)
    unique = [t for t in unique if not shares_five_words(t)]
    rng.shuffle(unique)
    return unique


def _five_grams(text: str) -> set[tuple[str, ...]]:
    words = re.findall(r"[a-z0-9']+", text.lower())
    return {tuple(words[i:i + 5]) for i in range(len(words) - 4)}


@lru_cache(maxsize=1)
def _measured_five_grams() -> frozenset:
    grams = set()
    for name in ("eval.jsonl", "final.jsonl"):
        for line in (ROOT / "opttree" / "assets" / "prompts" / name).read_text(encoding="utf-8").splitlines():
            if line.strip():
                for turn in json.loads(line)["turns"]:
                    grams |= _five_grams(turn)
    return frozenset(grams)


def shares_five_words(text: str) -> bool:
    """Whether the prompt shares a run of five words with the eval or final set (checked, never read)."""
    return bool(_five_grams(text) & _measured_five_grams())


def main() -> None:
    append_part(PART, build, SEED)


if __name__ == "__main__":
    main()
