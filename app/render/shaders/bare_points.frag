#version 330 core
// Bare points, fragment stage: a constant added into the accumulation target.

out vec4 accumulated;

void main() {
    accumulated = vec4(1.0);
}
