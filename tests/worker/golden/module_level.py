import thirdparty
CLIENT = thirdparty.connect()

def add(a, b):
    return a + b
