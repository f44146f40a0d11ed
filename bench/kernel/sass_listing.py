"""Reading a SASS listing, as `cuobjdump -sass` ("Function : NAME" headers) or `nvdisasm -c`
(".text.NAME:" labels) prints it: one (function, opcode, operands) per instruction. Shared by
sass_mix.py and sass_turns.py."""
import re

# An instruction line: its /*address*/, an optional predicate, the opcode with its modifiers, the operands.
INSTRUCTION = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_.]*)([^;]*)")
NVDISASM_FUNCTION = re.compile(r"^\.text\.(\S+):\s*$")


def instructions(path):
    """Yields (function name or None, opcode with modifiers, operands) in listing order."""
    function = None
    with open(path, errors="replace") as f:
        for line in f:
            if "Function :" in line:
                function = line.split("Function :", 1)[1].strip()
                continue
            header = NVDISASM_FUNCTION.match(line)
            if header:
                function = header.group(1)
                continue
            m = INSTRUCTION.search(line)
            if m:
                yield function, m.group(1), m.group(2).strip()
