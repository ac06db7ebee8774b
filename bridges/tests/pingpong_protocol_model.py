#!/usr/bin/env python3
"""A model (not the kernel) of the shared-pipeline protocol of moe_l1_cute_dsl_pingpong.py: one
producer fills the k-tiles of every tile in order into S stages; consumer group c takes tiles c,
c + 2, ...; every wait is by mbarrier phase parity (try_wait.parity: it passes when the barrier's
completed-phase count has the other parity, so fills two phases apart look alike). Random
interleavings over tile counts, k-tiles and stage counts. Without the mainloop turn the model must
find a group passing a wait on the wrong fill (the failure the first H200 run hit); with the turn
(named barriers 3 and 4, an arrive only when the other group has a next tile) it must find no wrong
pass, no deadlock and no unmatched arrive. Exit 1 otherwise."""
import random
import sys

def run(n_tiles, k, S, turn, seed):
    rnd = random.Random(seed)
    full = [0] * S; empty = [0] * S  # completed phases
    owner = {}  # global k-index -> group that consumed it
    # producer
    prod = {"g": 0}
    total = n_tiles * k
    # consumers: list of (tile list), position
    cons = []
    for c in (0, 1):
        tiles = list(range(c, n_tiles, 2))
        cons.append({"c": c, "tiles": tiles, "ti": 0, "kk": 0, "state": "turn", "released": 0})
    # named barriers 3, 4: arrivals pending per generation (count of arrive-groups)
    nb = {3: 0, 4: 0}
    waiting = {3: False, 4: False}
    def has_next_other(cs, tile):  # other group's next tile = tile + 1
        return tile + 1 < n_tiles
    steps = 0
    while True:
        steps += 1
        if steps > 10 ** 6:
            return "livelock"
        moves = []
        # producer move
        g = prod["g"]
        if g < total:
            s = g % S
            if empty[s] % 2 == (g // S) % 2:  # parity wait passes
                if empty[s] != g // S:
                    return f"producer passed on wrong empty phase g={g}"
                moves.append(("p",))
        for cs in cons:
            if cs["ti"] >= len(cs["tiles"]):
                continue
            tile = cs["tiles"][cs["ti"]]
            if cs["state"] == "turn":
                first = cs["c"] == 0 and cs["ti"] == 0
                if not turn or first:
                    moves.append(("go", cs))
                else:
                    bid = 3 + cs["c"]
                    if nb[bid] > 0:
                        moves.append(("sync", cs, bid))
            elif cs["state"] == "main":
                gg = tile * k + cs["kk"]
                s = gg % S
                if full[s] % 2 != (gg // S) % 2:
                    moves.append(("wait", cs, gg, s))
        if not moves:
            if prod["g"] == total and all(cs["ti"] >= len(cs["tiles"]) for cs in cons):
                return "ok" if all(v == 0 for v in nb.values()) else f"unmatched arrives {nb}"
            return "deadlock"
        mv = rnd.choice(moves)
        if mv[0] == "p":
            g = prod["g"]; full[g % S] += 1; prod["g"] += 1
        elif mv[0] == "go":
            mv[1]["state"] = "main"
        elif mv[0] == "sync":
            nb[mv[2]] -= 1; mv[1]["state"] = "main"
        elif mv[0] == "wait":
            cs, gg, s = mv[1], mv[2], mv[3]
            if full[s] != gg // S + 1:
                return f"group {cs['c']} passed on the wrong fill of stage {s} (wanted fill {gg // S}, completed {full[s]})"
            empty[s] += 1  # consume + release (immediate, conservative enough for the parity question)
            cs["kk"] += 1
            if cs["kk"] == k:
                tile = cs["tiles"][cs["ti"]]
                if turn and has_next_other(cs, tile):
                    nb[4 - cs["c"]] += 1
                cs["kk"] = 0; cs["ti"] += 1; cs["state"] = "turn"
def main():
    results = {}
    for turn in (False, True):
        res = {}
        for n_tiles in range(1, 7):
            for k in (1, 2, 3, 5, 45, 112):
                for S in (4, 6, 8, 12):
                    for seed in range(3):
                        r = run(n_tiles, k, S, turn, seed)
                        key = "ok" if r == "ok" else ("wrong fill" if "wrong fill" in r else r)
                        res[key] = res.get(key, 0) + 1
        results[turn] = res
        print(("with the turn: " if turn else "without the turn: ") + str(res))
    ok = results[True] == {"ok": sum(results[True].values())} and results[False].get("wrong fill", 0) > 0
    print("PASS: the turn removes every wrong pass (and the model finds them without it)" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
