#version 330 core
// Particles, vertex stage: one point sprite per particle. Colour comes from the particle's
// population (palette lookup), from its speed, or from its heading (direction of travel as a
// colour: +x red, +y green, +z blue), both estimated from the previous frame's position.

uniform mat4 view_projection;
uniform float point_size;    // sprite diameter in framebuffer pixels
uniform int colour_mode;     // 0: by population, 1: by speed, 2: by heading
uniform vec4 palette[16];    // rgb colour and brightness weight per population label
uniform float speed_scale;   // 1 / (frame interval * median speed)

in vec3 position;
in vec3 previous;
in float population;

out vec3 sprite_colour;

vec3 speed_colour(float s) {
    // s in [0, 1]: slow deep blue, median pink, fast amber (distinct on black, and still
    // distinct where overlapping sprites push the tone curve towards white)
    vec3 slow = vec3(0.25, 0.35, 1.0);
    vec3 middle = vec3(0.95, 0.35, 0.6);
    vec3 fast = vec3(1.0, 0.8, 0.3);
    return s < 0.5 ? mix(slow, middle, s * 2.0) : mix(middle, fast, s * 2.0 - 1.0);
}

void main() {
    gl_Position = view_projection * vec4(position, 1.0);
    gl_PointSize = point_size;
    vec4 entry = palette[int(population) & 15];
    if (colour_mode == 1) {
        // speed over the median speed, on a log scale: a quarter of it or less is 0, four
        // times or more is 1
        float ratio = max(length(position - previous) * speed_scale, 1e-6);
        float s = clamp(0.5 + 0.25 * log2(ratio), 0.0, 1.0);
        sprite_colour = speed_colour(s) * entry.a;
    } else if (colour_mode == 2) {
        // a particle that did not move (first frame, paused) shows the palette colour
        vec3 travel = position - previous;
        float distance = length(travel);
        sprite_colour = (distance > 0.0 ? 0.5 + 0.5 * travel / distance : entry.rgb) * entry.a;
    } else {
        sprite_colour = entry.rgb * entry.a;
    }
}
