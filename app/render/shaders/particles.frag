#version 330 core
// Particles, fragment stage: a Gaussian sprite added into the floating-point accumulation target
// (blending ONE, ONE). Alpha carries the Gaussian weight, so it counts overlapping sprites.

uniform float intensity;     // brightness of one particle at its sprite centre

in vec3 sprite_colour;
out vec4 accumulated;

void main() {
    vec2 offset = gl_PointCoord * 2.0 - 1.0;
    float r2 = dot(offset, offset);
    if (r2 > 1.0) {
        discard;
    }
    float weight = exp(-4.0 * r2);   // sigma = 0.35 of the sprite radius; 1.8% left at the rim
    accumulated = vec4(sprite_colour * (intensity * weight), weight);
}
