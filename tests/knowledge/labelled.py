"""A labelled set of realistic dealer questions and the FAQ section that answers each.

Each entry is ``(question, source document, heading of the answering section)``; the questions are
worded the way customers ask, not copied from the headings.
"""

from __future__ import annotations

QUESTIONS: tuple[tuple[str, str, str], ...] = (
    (
        "Can I bring back a pre-owned car if I don't like it after a few days?",
        "return-policy.md",
        "Can I return a used car if I change my mind?",
    ),
    ("Do I have to book ahead to get my oil changed?", "service-faq.md", "Do I need an appointment for an oil change?"),
    (
        "Will you give me a courtesy vehicle while mine is in the shop?",
        "service-faq.md",
        "Do you offer loaner cars or a shuttle?",
    ),
    (
        "How many years does the engine and transmission coverage last?",
        "new-vehicle-warranty.md",
        "How long is the powertrain warranty?",
    ),
    ("How much is your documentation charge?", "pricing-fees.md", "What is the documentation fee?"),
    ("Do I get my $500 deposit back if I walk away?", "deposits-holds.md", "Is the deposit refundable?"),
    (
        "I still owe money on my car, can I trade it in?",
        "trade-in.md",
        "Can I trade in a car that still has a loan on it?",
    ),
    (
        "My credit is pretty bad, can I still get approved for a loan?",
        "financing.md",
        "Can I get a car loan with bad credit or no credit history?",
    ),
    ("Does checking my rate lower my credit score?", "financing.md", "Will applying hurt my credit score?"),
    ("Can you drop the car off at my house?", "home-delivery.md", "Do you deliver cars to my home?"),
    ("How often do my tires need rotating?", "maintenance-schedule.md", "How often should tires be rotated?"),
    (
        "Is the hybrid battery covered under warranty?",
        "new-vehicle-warranty.md",
        "Are hybrid and electric batteries covered longer?",
    ),
    ("Do I have to pay to get a recall fixed?", "recalls.md", "How much does a recall repair cost?"),
    ("How do I stop getting texts from you?", "privacy.md", "How do I stop text messages or e-mails?"),
    (
        "What coverage comes with a certified used car?",
        "cpo-program.md",
        "What warranty comes with a certified pre-owned vehicle?",
    ),
    ("What time do you open on Sunday?", "hours-location.md", "What are your sales and service hours?"),
    (
        "Can I cancel the extended warranty I bought and get a refund?",
        "service-contracts.md",
        "Can I cancel a service contract and get a refund?",
    ),
    ("Can I leave my car for service when you are closed?", "hours-location.md", "Can I drop off my car after hours?"),
    ("What paperwork should I bring to buy a car?", "sales-faq.md", "What should I bring when I come to buy?"),
    (
        "How long does an electric car take to charge at home?",
        "ev-ownership.md",
        "How long does it take to charge an electric vehicle?",
    ),
    ("Can I keep a car for a day to try it out?", "sales-faq.md", "Can I take a car home overnight before I decide?"),
    (
        "Will you service a car I bought from another dealer?",
        "service-faq.md",
        "Will you work on a car I did not buy here?",
    ),
    ("Can I pay for the car with a credit card?", "pricing-fees.md", "How can I pay for my vehicle?"),
    ("How long is my trade-in quote good for?", "trade-in.md", "How long is a trade-in offer valid?"),
    (
        "Do you have EV chargers I can use while I'm there?",
        "hours-location.md",
        "Do you have chargers for electric vehicles?",
    ),
)
