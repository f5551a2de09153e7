"""Returns the broker to its state right after setup: every key dropped (the stream, its consumer
group, the sequence), so ``setup.py`` creates them afresh. The store needs nothing: ``INV_DB`` lies
in each scenario's own directory.

With ``[reset]`` in the system file, ``recorder explore`` keeps one Redis per job slot between
schedules and runs this, then ``setup.py``, before each schedule.
"""

from common import REDIS_DOWN, broker, fail


def main():
    try:
        broker().flushall()
    except REDIS_DOWN as error:
        fail(f"Redis did not answer: {error}", 4)


if __name__ == "__main__":
    main()
