#include <iostream>
int main() { std::cout << "stax\n"; }
