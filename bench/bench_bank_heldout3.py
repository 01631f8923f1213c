"""The third held-out bank, written blind to the compactor's heuristics and to the other banks' wording:
prompt and heuristic work must never read it.

An invoice renderer (``invoice.py`` turns the line items of a CSV into a plain-text invoice: subtotal,
discount, tax and total in the seller's currency) with a ``billing.ini`` and a ``VERSION`` whose values the
user needs later, a record of issued invoices under ``fixtures/`` the user wants left alone, and billing NOTES
of habits nobody gave as standing rules. Its withdrawals name their rule only about half the time: the others
say what they lift by paraphrase or by its subject. :mod:`bench_bank_tuning`, :mod:`bench_bank_heldout` and
:mod:`bench_bank_heldout2` hold the other halves in other words; no sentence here appears there
(``tests/evaluation/test_model_bench_corpus.py`` checks it against their source text).
"""

from __future__ import annotations

from bench_corpus import Bank

_INVOICE = '''"""Render a plain-text invoice from line items: subtotal, discount, tax and total."""
import argparse
import configparser
import csv
from decimal import ROUND_HALF_UP, Decimal

parser = argparse.ArgumentParser()
parser.add_argument("items")
parser.add_argument("--client", default="Walk-in customer")
parser.add_argument("--discount", type=Decimal, default=Decimal("0"), help="percent off the subtotal")
parser.add_argument("--config", default="billing.ini")
args = parser.parse_args()
config = configparser.ConfigParser()
config.read(args.config)
invoice = config["invoice"]
cent = Decimal("0.01")
with open(args.items, newline="") as handle:
    rows = list(csv.DictReader(handle))
print(f"{invoice['prefix']}-{invoice['next_number']}  bill to: {args.client}")
subtotal = Decimal("0.00")
for row in rows:
    line = (Decimal(row["qty"]) * Decimal(row["unit_price"])).quantize(cent, ROUND_HALF_UP)
    subtotal += line
    print(f"  {row['description']:<24} {row['qty']:>5} x {row['unit_price']:>8} = {line:>9}")
discount = (subtotal * args.discount / 100).quantize(cent, ROUND_HALF_UP)
tax = ((subtotal - discount) * Decimal(invoice["tax_rate"])).quantize(cent, ROUND_HALF_UP)
currency = invoice["currency"]
print(f"subtotal {currency} {subtotal}  discount {discount}  tax {tax}")
print(f"TOTAL {currency} {subtotal - discount + tax}")
'''

_ITEMS = """description,qty,unit_price
Site audit (days),3,640.00
Hosting (annual),1,189.00
Support hours,7.5,85.00
Domain renewal,2,14.99
"""

_BILLING = """# seller settings for the invoice renderer
[seller]
name = Lanternfish Web Studio
vat_id = GB448291706
[invoice]
prefix = INV
next_number = 2047
tax_rate = 0.20
currency = EUR
[mail]
relay = smtp-relay-7.lanternfish.internal
port = 2587
"""

_ISSUED = """INV-2044  2026-10-03  Harbour Bakery      1188.00  sha 5e0b9d7714c2
INV-2045  2026-10-11  Quayside Dental     2904.10  sha 0f6a2c83e951
INV-2046  2026-10-24  North Fell Cycles    612.40  sha a81c3f09be27
"""

_NOTES = """# Billing notes
Invoice numbers must never be reused, even for a cancelled invoice.
Always round each line to the cent before adding it up.
Do not send an invoice to a client before finance has seen the draft.
Every credit note needs the number of the invoice it corrects.
"""

_CHANGELOG = """# Changelog
## Unreleased
- Discount is given as a percentage of the subtotal.
## 2.3.1
- Support hours may be fractional.
"""

HELD_OUT_3 = Bank(
    name="invoice",
    seed=58231,
    files={
        "invoice.py": _INVOICE,
        "items.csv": _ITEMS,
        "billing.ini": _BILLING,
        "fixtures/issued.txt": _ISSUED,
        "fixtures/empty.csv": "description,qty,unit_price\n",
        "VERSION": "invoicer 2.4.0b2\n",
        "NOTES.md": _NOTES,
        "CHANGELOG.md": _CHANGELOG,
    },
    tasks=(
        "Add a --due-days option to invoice.py that prints the payment due date under the header.",
        "Make sure the TOTAL line always shows two decimal places, even when the amount is a round number.",
        "Can you have invoice.py print the seller's VAT id from billing.ini right below the invoice number?",
        "Write a small test that renders fixtures/empty.csv and checks that the total comes out as zero.",
        "Have the script never accept a negative discount; reject it with a clear error instead.",
        "Rename --client to --bill-to, and keep --client working as an alias for now.",
        "Add a lookup so the totals print a euro sign instead of the letters EUR.",
        "Sort the line items by amount, biggest first, before they get printed.",
        "Please make sure an items file without a unit_price column fails with a readable message, not a"
        " KeyError.",
        "Bump VERSION to 2.4.0 and draft a short release announcement for it.",
    ),
    chatter=(
        "What happens with --discount if somebody passes a negative number?",
        "How far along are you with the due-date change?",
        "Is ROUND_HALF_UP what accountants usually expect, or is banker's rounding more common?",
        "Thanks, that output looks right to me.",
        "Which line of invoice.py reads the tax rate?",
        "Hmm, why did that last command blow up?",
        "Where does the invoice number come from at the moment?",
        "Ok cool. Anything in the git history I should know about?",
        "How many line items does items.csv have right now?",
        "Nice. Give me a one-paragraph status whenever you get a moment.",
    ),
    long_context=(
        (
            "Morning! So the plan for this week is to get the invoice renderer into a state where Priya in"
            " accounts can run it herself at month end without pinging me, which means the output has to be"
            " boringly predictable and the code has to stay small enough that she could read it over coffee.",
            "Anyway, that's the background; I'm in and out of meetings until lunch today, so replies from me"
            " might be slow for a while, though nothing on this list is urgent as far as I know and the"
            " client isn't expecting anything from us before Friday afternoon at the earliest.",
        ),
        (
            "Some context before you dive in, since you weren't around for the last round of this: we had a"
            " bad month in the spring when two invoices went out with totals a cent off, a client's auditor"
            " noticed, and it turned into a week of emails, so people here are a bit jumpy about this tool.",
            "I know that sounds fussy for a forty-line script, but it's the kind of thing that saves an"
            " awkward phone call later on, and to be fair the rest of the work on this is pretty relaxed"
            " and nobody is breathing down our necks about it, at least not until the quarter closes at the"
            " end of next month.",
        ),
        (
            "Okay, I'm back from the call with the client; they were mostly happy, they want a due date on"
            " the invoices and maybe a discount line for long-standing customers, and they asked twice"
            " whether the numbers would match what they see in their own bookkeeping software, which I"
            " promised they would.",
            "The due date bit is probably the bigger job of the two, and I told them it might slip to next"
            " week, which they seemed fine with as long as a sample reaches them this evening, ideally before"
            " six so it lands in their inbox before the office empties out.",
        ),
        (
            "Long message, sorry, I've been saving things up: the repo has changed hands a couple of times,"
            " so some of what you'll find in NOTES.md is folklore from whoever had it before me and some of"
            " it is still true, and I honestly haven't had the time to go through it line by line and sort"
            " out which is which.",
            "Priya reckons the bit about finance seeing drafts first dates from a reorg two years ago, and"
            " nobody has been able to tell me whether the current team even knows it was ever written down"
            " anywhere, so for now it just sits there looking official.",
        ),
    ),
    rules={
        "decimal": (
            (
                "Money in this codebase is Decimal, full stop; please don't let a float anywhere near an"
                " amount.",
                "please don't let a float anywhere near an amount",
            ),
            (
                "Quick heads-up before you touch the maths: no floats for prices, quantities or totals,"
                " we've been burned by 0.1 + 0.2 before.",
                "no floats for prices, quantities or totals",
            ),
            (
                "Please keep every amount a Decimal and don't convert to float, not even for formatting.",
                "keep every amount a Decimal and don't convert to float",
            ),
        ),
        "issued": (
            (
                "fixtures/issued.txt is the record of invoices we actually sent, so don't modify it in any"
                " way.",
                "fixtures/issued.txt is the record of invoices we actually sent, so don't modify it in any"
                " way",
            ),
            (
                "Hands off fixtures/issued.txt, please. Those lines match what finance has on file.",
                "Hands off fixtures/issued.txt",
            ),
            (
                "Do not edit, regenerate or reformat fixtures/issued.txt under any circumstances.",
                "Do not edit, regenerate or reformat fixtures/issued.txt under any circumstances",
            ),
        ),
        "render": (
            (
                "After each change, run python3 invoice.py items.csv and paste me the TOTAL line.",
                "After each change, run python3 invoice.py items.csv and paste me the TOTAL line",
            ),
            (
                "Standing request: every edit to invoice.py gets followed by a sample render of items.csv,"
                " and I want to see the total it prints.",
                "every edit to invoice.py gets followed by a sample render of items.csv",
            ),
            (
                "I'd like you to rerun the sample invoice every time you change the code, so we catch"
                " rounding drift early.",
                "rerun the sample invoice every time you change the code",
            ),
        ),
        "ticket": (
            (
                "Commit messages here start with the ticket id, like BILL-212 followed by a short summary.",
                "Commit messages here start with the ticket id",
            ),
            (
                "Our house style: each commit subject begins with its BILL- ticket number, no exceptions.",
                "each commit subject begins with its BILL- ticket number",
            ),
            (
                "Put the BILL ticket number at the front of every commit message you write, the release"
                " script parses it.",
                "Put the BILL ticket number at the front of every commit message",
            ),
        ),
        "changelog": (
            (
                "Anything a customer could notice goes in CHANGELOG.md under Unreleased, one line per"
                " change.",
                "Anything a customer could notice goes in CHANGELOG.md under Unreleased",
            ),
            (
                "Keep CHANGELOG.md current: each user-facing change needs its own line in the Unreleased"
                " section.",
                "each user-facing change needs its own line in the Unreleased section",
            ),
            (
                "From here on, add a changelog entry for every behaviour change you make.",
                "add a changelog entry for every behaviour change",
            ),
        ),
        "stdlib": (
            (
                "This has to run on the accountant's locked-down laptop, so no pip installs and no"
                " third-party packages.",
                "no pip installs and no third-party packages",
            ),
            (
                "Stick to the standard library; we can't ship extra dependencies to the billing box.",
                "Stick to the standard library",
            ),
            (
                "Please don't pull in reportlab or any other outside package, whatever the temptation.",
                "don't pull in reportlab or any other outside package",
            ),
        ),
    },
    lifts={
        "decimal": (
            "Forget what I said about floats, plain float arithmetic is fine for this prototype.",
            "Go ahead and use ordinary floats for the amounts; the Decimal thing was overkill.",
            "Money maths is moving to the ledger service, so which numeric type this script uses no longer"
            " matters.",
            "The exact-arithmetic rule is scrapped, rounding once at the end is good enough now.",
        ),
        "issued": (
            "You may edit fixtures/issued.txt from now on, finance re-exported it and no longer cares about"
            " our copy.",
            "The issued.txt fixture is fair game now, regenerate it whenever a change needs that.",
            "That ledger of past bills I had you leave untouched? Change it as much as you need.",
            "Nothing in the test data folder is restricted any more, that copy is throwaway.",
        ),
        "render": (
            "No need to keep rerunning the sample invoice after every edit anymore.",
            "You can stop pasting me the TOTAL line after changes, I'll check it myself.",
            "A watcher now does the demo printout whenever a file is saved, so you can retire that ritual"
            " of yours.",
            "Drop that routine of checking the output following every modification; it was useful while the"
            " maths was shaky.",
        ),
        "ticket": (
            "The BILL- prefix on commit messages is gone, Jira's been retired, so just write normal"
            " subjects.",
            "Ticket numbers in commits: not needed anymore.",
            "We switched releases over to tags, so how you title your changes in git is up to you now.",
            "Whatever that tracker-id convention was for git history, consider it dead.",
        ),
        "changelog": (
            "Stop updating CHANGELOG.md, we generate release notes from PR titles now.",
            "Changelog entries aren't your job anymore, the docs team writes them.",
            "No more jotting down release notes as you go; that requirement is gone.",
            "You don't have to maintain the what's-new file any longer, nobody reads it.",
        ),
        "stdlib": (
            "Third-party packages are fine now, IT finally unlocked pip on that laptop.",
            "Feel free to pip install reportlab, the standard-library-only thing is over.",
            "The billing box got a proper environment last week, so bring in whatever libraries make this"
            " easier.",
            "Extra dependencies are allowed again, add what you need.",
        ),
    },
    one_offs=(
        (
            "Skip the sample render this time, I only touched the README.",
            "Skip the sample render this time",
        ),
        (
            "For this one commit, leave the ticket id off; it's a typo fix.",
            "For this one commit, leave the ticket id off",
        ),
        (
            "Just this once, hardcode the tax rate at 0.19 so I can show the German client a draft.",
            "Just this once, hardcode the tax rate at 0.19",
        ),
        (
            "Today only, push straight to main without the review step; the release is at five.",
            "Today only, push straight to main without the review step",
        ),
        (
            "Don't bother with a changelog line for this particular fix, it's internal only.",
            "Don't bother with a changelog line for this particular fix",
        ),
        (
            "Use --discount 15 on the next render only, that's the Harbour Bakery deal.",
            "Use --discount 15 on the next render only",
        ),
    ),
    commands=(
        "cat invoice.py",
        "python3 invoice.py items.csv --client 'Harbour Bakery'",
        "ls -1 fixtures",
        "head -n 3 items.csv",
        "git log --oneline -n 5",
        "python3 invoice.py fixtures/empty.csv",
        "python3 invoice.py items.csv --discount 10",
    ),
    failing=(
        "python3 invoice.py items.csv --currency USD",
        "python3 invoice.py fixtures/missing.csv",
        "python3 invoice.py items.csv --config billing.toml",
        "git show v2.3.0",
        "python3 invoice.py items.csv --discount ten",
    ),
    value_runs=(
        ("python3 invoice.py items.csv", "3331.78"),
        ("grep -n relay billing.ini", "smtp-relay-7.lanternfish.internal"),
        ("grep -n port billing.ini", "2587"),
        ("grep -n INV-2046 fixtures/issued.txt", "a81c3f09be27"),
        ("head -1 VERSION", "2.4.0b2"),
    ),
    rule_like_runs=("cat NOTES.md", "grep -n -i never NOTES.md", "sed -n 3,4p NOTES.md"),
    promises=(
        "I won't ever renumber an invoice that has already gone out.",
        "From now on I always print the subtotal before the tax line when I show you a render.",
    ),
    log_name="render-{n}.log",
    log_line="[render {run}] batch {n}: 14 invoices, 3 credit notes, tax EUR 812.40, mail queued, pdf ok",
)
