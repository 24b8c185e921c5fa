"""The scripted customer (customer.py) on its own: a four-goal scenario spoken turn by turn."""

from __future__ import annotations

from tests.support.bank_harness import import_task_modules

customer = import_task_modules("customer")["customer"]

GOALS = [
    "Find out how much money is in my checking account right now",
    "Move $800 from my savings into checking",
    "Pay my electricity bill of $96.40 to Metro Power this Friday",
    "Get a text message when my checking balance drops under $150",
]


def brief(tone: str = "friendly", detail: str = "moderate", max_turns: int = 10) -> dict:
    persona = {"name": "Maya Okafor", "age": 29, "occupation": "nurse",
               "personality_traits": ["organised"], "tone": tone, "detail_level": detail}
    return {"scenario_id": "banking-000", "persona": persona, "first_message": "Hi there.",
            "goals": GOALS, "max_turns": max_turns}


def converse(the_brief: dict, agent_lines: list[str]) -> list[dict]:
    """Speak `agent_lines` in order; the customer's lines (as the log would hold them)."""
    history: list[dict] = [{"speaker": "customer", "turn": 0, "text": "Hi there."}]
    answers = []
    for turn, said in enumerate(agent_lines, start=1):
        line = customer.scripted_reply(the_brief, history, said)
        history += [{"speaker": "agent", "turn": turn - 1, "text": said},
                    dict(line, speaker="customer", turn=turn)]
        answers.append(line)
        if line["ended"]:
            break
    return answers


def test_goals_are_revealed_one_turn_at_a_time_then_a_goodbye():
    answers = converse(brief(), ["How can I help?", "Your balance is $2,310.", "Done.",
                                 "Scheduled.", "Alert set up."])
    assert [a["goal_index"] for a in answers] == [0, 1, 2, 3, None]
    assert [a["kind"] for a in answers] == ["goal"] * 4 + ["goodbye"]
    for answer, goal in zip(answers[:4], GOALS, strict=True):
        assert customer.as_clause(goal) in answer["text"]
    assert answers[-1]["ended"] and answers[-1]["end_reason"] == "satisfied"
    assert not any(a["ended"] for a in answers[:-1])


def test_a_question_gets_the_goals_details_and_a_second_one_no_more_and_the_next_goal():
    answers = converse(brief(), ["Hello!", "Done.", "Moved.", "Which bill, and how much?",
                                 "And which day exactly?", "Set."])
    details, no_more = answers[3], answers[4]
    assert details["kind"] == "details" and details["goal_index"] == 2
    for specific in ("$96.40", "Metro Power", "Friday"):
        assert specific in details["text"]
    # Nothing more to tell about this goal: say so and go on with the next, never stall.
    assert "don't know more" in no_more["text"]
    assert no_more["kind"] == "goal" and no_more["goal_index"] == 3
    assert customer.as_clause(GOALS[3]) in no_more["text"]
    assert answers[5]["ended"]  # the last goal answered


def test_an_agent_ending_every_message_with_a_question_still_hears_every_goal():
    """Every agent message asks something (no mere offer of help): each customer reply is a
    goal's details, or "I don't know more" with the next goal — every goal comes up within
    the turn limit and the conversation ends."""
    asking = [f"Done with that. Would you like me to note anything on file ({n})?"
              for n in range(10)]
    answers = converse(brief(max_turns=10), ["Hello, what can I do for you?", *asking])
    revealed = [a["goal_index"] for a in answers if a["kind"] == "goal"]
    assert revealed == [0, 1, 2, 3]
    assert len(answers) <= 10 and answers[-1]["ended"]
    assert answers[-1]["end_reason"] == "satisfied"
    assert all(a["kind"] in ("goal", "details", "goodbye") for a in answers)


def test_a_refusal_is_acknowledged_and_the_customer_moves_on():
    answers = converse(brief(), ["Hi, what do you need?",
                                 "Sorry, I can't do that: no tool serves it."])
    assert answers[1]["goal_index"] == 1 and answers[1]["kind"] == "goal"
    assert "can't be done" in answers[1]["text"]
    # A refusal of the last goal ends the conversation, satisfied.
    last = converse(brief(), ["Hi", "ok", "ok", "ok", "I'm unable to set up text alerts."])
    assert last[-1]["ended"] and last[-1]["end_reason"] == "satisfied"


def test_a_question_that_only_offers_more_help_moves_on():
    answers = converse(brief(), ["Hi!", "Your balance is $10. Is there anything else I can "
                                        "help you with?"])
    assert answers[1]["goal_index"] == 1 and answers[1]["kind"] == "goal"


def test_tone_and_detail_level_shape_the_wording():
    formal = converse(brief("formal", "detailed"), ["Good day.", "Done."])[1]["text"]
    brisk = converse(brief("urgent", "brief"), ["Hi.", "Done."])[1]["text"]
    assert formal.startswith("Thank you.") and "To be exact: $800" in formal
    assert brisk == "OK. Move $800 from my savings into checking."


def test_the_same_conversation_every_time():
    lines = ["Hello", "What account?", "Done", "I cannot do that", "Anything else?", "ok"]
    assert converse(brief(), lines) == converse(brief(), lines)


def test_classify_reads_the_agents_message():
    assert customer.classify("What is your account number?") == "question"
    assert customer.classify("Please provide the amount.") == "question"
    assert customer.classify("I'm unable to do that without the account number. What is "
                             "it?") == "question"
    assert customer.classify("I can\u2019t help with that. Anything else?") == "refusal"
    assert customer.classify("Done. Anything else I can help you with?") == "offer"
    assert customer.classify("Done, what else?") == "offer"
    assert customer.classify("Sent. Let me know if you need anything.") == "offer"
    assert customer.classify("Let me know the amount.") == "question"
    assert customer.classify("Your transfer is complete.") == "statement"


def test_goal_details_are_the_specifics():
    assert customer.goal_details(GOALS[2]) == ["$96.40", "Metro Power", "Friday"]
    assert customer.goal_details(GOALS[0]) == []
    assert customer.goal_details("Let the bank know I'll be in Italy and Greece from June 3 "
                                 "to June 21") == ["Italy", "Greece", "June 3", "June 21"]
