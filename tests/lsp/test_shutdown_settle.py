"""`shutdown` waits for the client's requests in flight (server/framing.py: settle), in process
and without timing luck: a request whose handler has finished but whose answer waits for the
loop's next turn is answered before `shutdown` is handled. The subprocess test of the same
(test_framing.py) answered [1, 3, 2] now and then when the hover finished just as `shutdown`
arrived."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from fsr_lsp.server import framing


def protocol_with(futures: dict) -> SimpleNamespace:
    return SimpleNamespace(_request_futures=futures, client_requests=set(futures) - {"ours"})


def answering(protocol: SimpleNamespace, msg_id: object, future: asyncio.Future, sent: list) -> None:
    """As pygls: the answer goes out from the future's done-callback, which forgets the request."""
    def send(_: asyncio.Future) -> None:
        protocol._request_futures.pop(msg_id, None)
        sent.append(msg_id)

    protocol._request_futures[msg_id] = future
    future.add_done_callback(send)


def test_a_request_finished_but_not_yet_answered_is_answered_before_settle_returns():
    async def scenario() -> list:
        loop = asyncio.get_running_loop()
        sent: list = []
        protocol = protocol_with({})
        finished = loop.create_future()
        answering(protocol, 2, finished, sent)
        protocol.client_requests.add(2)
        finished.set_result(None)  # done; its answer is scheduled for the loop's next turn
        await framing.settle(protocol, 1.0)  # type: ignore[arg-type]
        sent.append("shutdown")
        return sent

    assert asyncio.run(scenario()) == [2, "shutdown"]


def test_a_request_still_running_is_waited_for_and_a_hung_one_only_for_the_grace():
    async def scenario() -> tuple[list, float]:
        loop = asyncio.get_running_loop()
        sent: list = []
        protocol = protocol_with({})
        quick, hung, ours = loop.create_future(), loop.create_future(), loop.create_future()
        answering(protocol, 2, quick, sent)
        answering(protocol, 3, hung, sent)
        protocol._request_futures["ours"] = ours  # the server's own request to the client: not waited for
        protocol.client_requests |= {2, 3}
        loop.call_later(0.05, quick.set_result, None)
        started = loop.time()
        await framing.settle(protocol, 0.3)  # type: ignore[arg-type]
        return sent, loop.time() - started

    sent, took = asyncio.run(scenario())
    assert sent == [2]
    assert 0.25 <= took < 1.0


def test_nothing_in_flight_returns_at_once():
    async def scenario() -> float:
        loop = asyncio.get_running_loop()
        protocol = protocol_with({"ours": loop.create_future()})
        started = loop.time()
        await framing.settle(protocol, 5.0)  # type: ignore[arg-type]
        return loop.time() - started

    assert asyncio.run(scenario()) < 0.1
