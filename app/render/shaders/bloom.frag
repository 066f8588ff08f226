#version 330 core
// Bloom, fragment stage of the two blur passes: a 9-tap Gaussian along one axis (sigma 2 texels
// of the half-size bloom target), reading the accumulated light (first pass, which also keeps
// only light above the threshold and halves the resolution) or the previous pass's result.
// Light is added back in the tone-map pass, before the filmic curve: bright cores glow.

uniform sampler2D source;
uniform vec2 direction;      // one texel of the source along the blur axis, in texture units
uniform float threshold;     // first pass: light below this (after exposure) does not glow
uniform float exposure;
uniform int first_pass;

out vec4 blurred;

const float WEIGHTS[5] = float[](0.2270270270, 0.1945945946, 0.1216216216, 0.0540540541,
                                 0.0162162162);

vec3 bright(vec2 uv) {
    vec3 light = texture(source, uv).rgb;
    if (first_pass == 1) {
        light = max(light * exposure - vec3(threshold), vec3(0.0)) / max(exposure, 1e-9);
    }
    return light;
}

void main() {
    vec2 uv = gl_FragCoord.xy / vec2(textureSize(source, 0)) * (first_pass == 1 ? 2.0 : 1.0);
    vec3 sum = bright(uv) * WEIGHTS[0];
    for (int i = 1; i < 5; ++i) {
        vec2 offset = direction * float(i);
        sum += (bright(uv + offset) + bright(uv - offset)) * WEIGHTS[i];
    }
    blurred = vec4(sum, 1.0);
}
