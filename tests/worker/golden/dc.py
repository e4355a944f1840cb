from dataclasses import dataclass, asdict

@dataclass
class P:
    x: int
    y: int = 2

def make(x: int):
    return asdict(P(x))

if __name__ == "__main__":
    raise SystemExit("main guard ran")
